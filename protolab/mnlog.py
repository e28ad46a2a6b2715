"""Mininet's log module, kept from changing ours.

Importing `mininet.log` calls `logging.setLoggerClass(MininetLogger)`: every logger created after it (our modules'
`logging.getLogger(__name__)` when they are imported later, as the orchestrator's are) gets a handler of its own
that writes each record a second time, without a newline, and a level of Mininet's choosing. Every site that
imports Mininet calls `standard_loggers()` right after.
"""

from __future__ import annotations

import logging


def standard_loggers() -> None:
    """Loggers created from here on are plain `logging.Logger`s again (Mininet's own logger keeps its class)."""
    logging.setLoggerClass(logging.Logger)


def quiet() -> None:
    """Mininet's own log at critical only (its tc warnings, e.g. on HTB's quantum, are not errors), ours untouched."""
    from mininet.log import setLogLevel

    setLogLevel("critical")
    standard_loggers()
