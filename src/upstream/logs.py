"""Logging for operators: one line per record, JSON or plain text, tagged with the request id.

Every HTTP request gets an id — the caller's `X-Request-ID` when it sends a sane one, else a
fresh one — that is echoed in the response header and attached to every log record written
while the request is handled (threadpool work included: contextvars are copied there), so one
request's lines can be found among many workers' output.
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
import time
import uuid
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any, TextIO

import click
from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from upstream.settings import Settings

REQUEST_ID_HEADER = "X-Request-ID"
#: An incoming id is reused only when it is short and printable, so it cannot forge log lines.
_SANE_REQUEST_ID = re.compile(r"[A-Za-z0-9._:/+=@-]{1,128}")
#: Loggers set to the configured level; uvicorn's access log is replaced by ours.
_SERVER_LOGGERS = ("upstream", "uvicorn", "uvicorn.error")

request_id_var: ContextVar[str | None] = ContextVar("upstream_request_id", default=None)
access_log = logging.getLogger("upstream.access")

#: Attributes every LogRecord has (and uvicorn's terminal-coloured copy of its message);
#: anything else was passed with `extra=` and is logged too.
_STANDARD_ATTRS = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message",
    "asctime",
    "request_id",
    "taskName",
    "color_message",
}


class JsonFormatter(logging.Formatter):
    """One JSON object per record: time, level, logger, message, request_id and extras."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        request_id = getattr(record, "request_id", None)
        if request_id:
            entry["request_id"] = request_id
        for key, value in vars(record).items():
            if key not in _STANDARD_ATTRS and not key.startswith("_"):
                entry[key] = value
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str, ensure_ascii=False)


class TextFormatter(logging.Formatter):
    """`time level logger [request id] message key=value…` for people at a terminal; an extra
    whose value the message already shows is not repeated. With `colour`, the level, logger
    and request id are coloured (ANSI), so warnings and errors stand out."""

    def __init__(self, *, colour: bool = False) -> None:
        super().__init__()
        self.colour = colour

    def format(self, record: logging.LogRecord) -> str:
        stamp = datetime.fromtimestamp(record.created, UTC).strftime("%Y-%m-%d %H:%M:%S")
        request_id = getattr(record, "request_id", None)
        tag = f" [{self._paint(request_id, fg='cyan')}]" if request_id else ""
        message = record.getMessage()
        said = set(message.split())
        extras = "".join(
            f" {key}={value}"
            for key, value in vars(record).items()
            if key not in _STANDARD_ATTRS and not key.startswith("_") and str(value) not in said
        )
        level = self._paint(f"{record.levelname:<7}", **_LEVEL_STYLES.get(record.levelno, {}))
        line = f"{stamp} {level} {self._paint(record.name, dim=True)}{tag} {message}{extras}"
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line

    def _paint(self, text: str, **style: Any) -> str:
        return click.style(text, **style) if self.colour else text


#: click.style arguments per level: the usual terminal colours of log levels.
_LEVEL_STYLES: dict[int, dict[str, Any]] = {
    logging.DEBUG: {"fg": "blue"},
    logging.INFO: {"fg": "green"},
    logging.WARNING: {"fg": "yellow", "bold": True},
    logging.ERROR: {"fg": "red", "bold": True},
    logging.CRITICAL: {"fg": "white", "bg": "red", "bold": True},
}


def formatter_for(log_format: str, stream: TextIO) -> logging.Formatter:
    """JSON or text as configured; `auto` is text with colours when `stream` is a terminal
    (people are reading) and JSON otherwise (a collector is). Text has colours only at a
    terminal, and never when NO_COLOR is set (https://no-color.org)."""
    terminal = _is_terminal(stream)
    if log_format == "json" or (log_format == "auto" and not terminal):
        return JsonFormatter()
    return TextFormatter(colour=terminal and not os.environ.get("NO_COLOR"))


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a replaced or closed stream
        return False


class _RequestIdFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = request_id_var.get()
        return True


class _StderrHandler(logging.StreamHandler[TextIO]):
    """Writes to whatever `sys.stderr` is at the time, so a replaced stderr is followed."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, _value: TextIO) -> None:
        """The stream is always the current stderr."""


def configure_logging(settings: Settings) -> None:
    """Send the server's log records through one stderr handler in the configured format.

    Idempotent: a second call replaces the handler of the first. The handler sits on the root
    logger beside any other (a test harness's, say), and uvicorn's own handlers are removed so
    its records come out in the same format. The process's other loggers keep their levels.
    """
    level = settings.log_level.upper()
    handler = _StderrHandler()
    handler.setFormatter(formatter_for(settings.log_format, sys.stderr))
    handler.addFilter(_RequestIdFilter())
    handler.setLevel(level)
    root = logging.getLogger()
    for previous in [h for h in root.handlers if isinstance(h, _StderrHandler)]:
        root.removeHandler(previous)
    root.addHandler(handler)
    # The root level is left alone (WARNING by default): other libraries' chatter (httpx's
    # INFO line per request, say) stays out; only the server's own loggers get `level`.
    for name in _SERVER_LOGGERS:
        logger = logging.getLogger(name)
        for old in list(logger.handlers):
            logger.removeHandler(old)
        logger.setLevel(level)
        logger.propagate = True
    # Our access line (with the request id and the route) replaces uvicorn's.
    logging.getLogger("uvicorn.access").disabled = True


def _request_id_from(scope: Scope) -> str:
    for name, value in scope.get("headers", ()):
        if name == b"x-request-id":
            candidate = bytes(value).decode("latin-1")
            if _SANE_REQUEST_ID.fullmatch(candidate):
                return candidate
    return uuid.uuid4().hex


class RequestContextMiddleware:
    """Assigns the request id, echoes it as `X-Request-ID` and writes one access log line."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = _request_id_from(scope)
        token = request_id_var.set(request_id)
        started = time.perf_counter()
        status = 500

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                MutableHeaders(scope=message)[REQUEST_ID_HEADER] = request_id
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        finally:
            access_log.info(
                "%s %s %d",
                scope["method"],
                scope["path"],
                status,
                extra={
                    "method": scope["method"],
                    "path": scope["path"],
                    "status": status,
                    "duration_ms": round((time.perf_counter() - started) * 1000, 1),
                },
            )
            request_id_var.reset(token)
