"""The files ptah reads and writes.

* :mod:`~ptah.adapters.files.reads` -- every input file is read as a regular
  file only, with a byte bound that holds whatever ``st_size`` says;
* :mod:`~ptah.adapters.files.writes` -- one output file is replaced atomically
  (unpredictable temporary name, ``O_EXCL | O_NOFOLLOW``), written through (a
  device, a FIFO) or refused (a folder, a read-only file, a link to a file);
* :mod:`~ptah.adapters.files.project` -- several files written into one
  project folder, never through a link inside it.

Each module's docs state its rules.
"""

from ptah.adapters.files.project import ProjectFolder, check_project_files
from ptah.adapters.files.reads import LineFile, kind_of, open_lines, read_bounded
from ptah.adapters.files.writes import check_output, replace_regular_file, write_pieces_atomically, write_text_atomically

__all__ = [
    "LineFile",
    "ProjectFolder",
    "check_output",
    "check_project_files",
    "kind_of",
    "open_lines",
    "read_bounded",
    "replace_regular_file",
    "write_pieces_atomically",
    "write_text_atomically",
]
