"""One module per `clipeval` subcommand, named after it (`extract-features` -> extract_features.py).

Each module has HELP, LIBRARIES (the installed libraries whose versions shape
its output, part of its rule's code fingerprint), add_arguments(parser) and
run(args), and imports what its command needs inside run(): the CLI loads
only the module of the command it runs, Snakemake reads LIBRARIES while it
plans, and the numerics pin must come before torch is imported.
"""
