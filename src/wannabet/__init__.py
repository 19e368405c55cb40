"""wannabet: database performance experiments you can bet on."""

from wannabet.version import tool_version

__version__ = tool_version()
