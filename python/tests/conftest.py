"""Shared fixtures. The operator packages the tests use come from WEFT_TEST_PACKAGES (the build's
tests/packages directory); WEFT_CUSTOM_OPP_PATH must name test_ops and add_custom among them so
that `import weft.torch` registers their ops."""
import os

import pytest


def _packages_dir():
    d = os.environ.get("WEFT_TEST_PACKAGES")
    if not d or not os.path.isdir(d):
        raise RuntimeError("set WEFT_TEST_PACKAGES to the build's tests/packages directory")
    return d


@pytest.fixture(scope="session")
def packages():
    return _packages_dir()


@pytest.fixture(scope="session")
def pkg(packages):
    return lambda name: os.path.join(packages, name)
