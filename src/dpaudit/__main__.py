"""``python -m dpaudit ...`` runs the command-line tool (same as the ``dpaudit`` script)."""

from dpaudit.cli import _console_main

if __name__ == "__main__":
    _console_main()
