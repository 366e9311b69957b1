"""The files commands read and write, for the CLI and the API (which reach no adapter): a corpus with its
judgement record, and output paths checked before the work and written atomically (devices and FIFOs
written through, folders refused) by :mod:`ptah.adapters.files`."""

from ptah.adapters.corpus_yaml import load_corpus
from ptah.adapters.files import append_text, check_output
from ptah.adapters.files import write_pieces_atomically as write_pieces
from ptah.adapters.files import write_text_atomically as write_text

__all__ = ["append_text", "check_output", "load_corpus", "write_pieces", "write_text"]
