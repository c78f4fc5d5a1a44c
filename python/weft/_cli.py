"""The `weft` command installed with the Python package: runs the bundled command-line tool.

`weft compile PROGRAM.pt2 -o MODEL.weft` is handled here, in Python: a torch.export program needs
PyTorch to read, and weft.torch.from_exported to convert. So is `weft serve MODEL` (weft.serve:
Ray Serve)."""
import argparse
import os
import sys


def _compile_pt2(argv):
    p = argparse.ArgumentParser(prog="weft compile",
                                description="Convert a torch.export program (.pt2, from torch.export.save) into a "
                                            "Weft model file. Parameters and buffers become constants; dims exported "
                                            "as dynamic stay dynamic.")
    p.add_argument("program", help="torch.export program (.pt2)")
    p.add_argument("-o", "--output", required=True, help="model file to write (e.g. model.weft)")
    p.add_argument("-p", "--package", action="append", default=[],
                   help="operator package root to load (repeatable; before WEFT_CUSTOM_OPP_PATH)")
    p.add_argument("--allow-override", action="store_true",
                   help="accept an op type registered twice (a package replaces a built-in)")
    p.add_argument("--embed-plugins", action="store_true", help="store the plugin libraries in the file")
    p.add_argument("--pin-plugins", action="store_true", help="require the exact plugin library builds when loading")
    a = p.parse_args(argv)
    if not os.path.isfile(a.program):
        sys.exit(f"weft compile: no such file: {a.program}")
    try:
        import torch
    except ImportError:
        sys.exit("weft compile: a .pt2 program needs PyTorch (pip install 'weft[torch]')")
    import weft
    import weft.torch as wt

    session = weft.Session(packages=a.package, allow_override=a.allow_override)
    try:
        program = torch.export.load(a.program)
    except Exception as e:  # noqa: BLE001 - any reader error: say which file
        sys.exit(f"weft compile: '{a.program}' is not a torch.export program: {str(e).splitlines()[0] if str(e) else e}")
    wt.register(session)
    try:
        model = wt.from_exported(program, session=session)
        model.save(a.output, a.embed_plugins, a.pin_plugins)
    except (ValueError, RuntimeError, KeyError) as e:
        sys.exit(f"weft compile: {a.program}: {e}")
    print(f"wrote {a.output}: {len(model.inputs)} input(s), {len(model.outputs)} output(s), {model.num_steps} step(s)")


def main():
    args = sys.argv[1:]
    if args and args[0] == "serve":
        from weft.serve._cli import main as serve_main
        serve_main(args[1:])
        return
    if len(args) >= 2 and args[0] == "compile" and any(x.endswith(".pt2") for x in args[1:] if not x.startswith("-")):
        _compile_pt2(args[1:])
        return
    exe = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "weft")
    if not os.access(exe, os.X_OK):
        sys.exit(f"weft: the command-line tool is missing from this installation ({exe}); reinstall the package")
    os.execv(exe, [exe, *args])


if __name__ == "__main__":
    main()
