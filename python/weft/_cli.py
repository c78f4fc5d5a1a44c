"""The `weft` command installed with the Python package: runs the bundled command-line tool."""
import os
import sys


def main():
    exe = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "weft")
    if not os.access(exe, os.X_OK):
        sys.exit(f"weft: the command-line tool is missing from this installation ({exe}); reinstall the package")
    os.execv(exe, [exe, *sys.argv[1:]])


if __name__ == "__main__":
    main()
