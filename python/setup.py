"""Builds the `weft` wheel: `/usr/bin/python3 -m pip wheel --no-build-isolation --no-deps python/`.

The native parts (the `weft._weft` extension and, when Debian's libtorch-dev is present,
`weft/torch/libweft_torch.so`) are built by the project's CMake build; set WEFT_CMAKE_BUILD_DIR to
reuse an existing build directory (only those two targets are built), otherwise one is configured
under build-wheel/. Nothing is downloaded.
"""
import glob
import os
import shutil
import subprocess

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


class CMakeBuild(build_ext):
    def run(self):
        build_dir = os.environ.get("WEFT_CMAKE_BUILD_DIR") or os.path.join(ROOT, "build-wheel")
        if not os.path.exists(os.path.join(build_dir, "CMakeCache.txt")):
            subprocess.check_call(["cmake", "-S", ROOT, "-B", build_dir, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
                                   "-DWEFT_BUILD_TESTS=OFF", "-DWEFT_BUILD_BENCH=OFF", "-DWEFT_BUILD_PYTHON=ON"])
        targets = subprocess.run(["cmake", "--build", build_dir, "--target", "help"], capture_output=True, text=True).stdout
        wanted = ["weft_python"] + (["weft_torch"] if "weft_torch" in targets else [])
        subprocess.check_call(["cmake", "--build", build_dir, "--target", *wanted])
        dest = os.path.join(self.build_lib, "weft")
        os.makedirs(os.path.join(dest, "torch"), exist_ok=True)
        ext = glob.glob(os.path.join(build_dir, "python", "weft", "_weft*.so"))
        if not ext:
            raise RuntimeError(f"the build in {build_dir} produced no weft/_weft*.so")
        shutil.copy2(ext[0], os.path.join(dest, os.path.basename(self.get_ext_filename("_weft"))))
        native = os.path.join(build_dir, "python", "weft", "torch", "libweft_torch.so")
        if os.path.exists(native):
            shutil.copy2(native, os.path.join(dest, "torch", "libweft_torch.so"))


setup(
    name="weft",
    version="0.1.0",
    description="A graph engine in which every operator is a plugin: Python and PyTorch bindings",
    packages=["weft", "weft.torch"],
    package_dir={"": "."},
    ext_modules=[Extension("weft._weft", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    python_requires=">=3.11",
    install_requires=["numpy"],
    zip_safe=False,
)
