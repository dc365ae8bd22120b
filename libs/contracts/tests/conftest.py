"""Registers the `unit` marker when libs/contracts tests run without the root config."""


def pytest_configure(config):
    config.addinivalue_line("markers", "unit: fast tests with no external services")
