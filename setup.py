"""Builds the `glass` extension with the project's CMake (target glass_python) and lets
setuptools install it; see pyproject.toml and docs/python.md."""

import os
import pathlib
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        source = pathlib.Path(__file__).parent.resolve()
        build = pathlib.Path(self.build_temp).resolve() / "cmake"
        build.mkdir(parents=True, exist_ok=True)
        subprocess.run(["cmake", "-S", str(source), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release",
                        "-DGLASS_BUILD_TESTS=OFF", f"-DPython3_EXECUTABLE={sys.executable}"], check=True)
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 2))
        subprocess.run(["cmake", "--build", str(build), "--target", "glass_python", "-j", jobs], check=True)
        built = next((build / "python").glob("glass*.so"))
        target = pathlib.Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built, target)


# Its own build folder: `build/` is the CMake build of the README's commands.
# packages=[]: the module is the extension alone (setuptools would otherwise take src/'s
# folders for packages); egg_base keeps its metadata out of the source tree.
setup(ext_modules=[CMakeExtension("glass")], cmdclass={"build_ext": CMakeBuild}, packages=[], py_modules=[],
      options={"build": {"build_base": "build-python"}, "egg_info": {"egg_base": "build-python"}})
