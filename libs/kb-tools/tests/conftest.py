"""Registers the `unit` marker when libs/kb tests run without the root config."""


def pytest_configure(config):
    config.addinivalue_line("markers", "unit: fast tests with no external services")
