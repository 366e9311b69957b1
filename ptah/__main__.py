from ptah.cli import main

main()
