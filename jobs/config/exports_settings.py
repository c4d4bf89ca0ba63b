"""The config's `exports` section: Prometheus metrics written and pushed at the end of every run, where the
run ends on the login node (jobs/ending/exports.py), as `collbench export prometheus` does by hand
(docs/exports.md)."""

from __future__ import annotations

import urllib.parse
from dataclasses import dataclass


@dataclass(kw_only=True, slots=True)
class ExportSettings:
    prometheus_textfile: str = ""
    """At the end of every run, write its metrics to this node_exporter textfile (a path ending in .prom,
    replaced whole); empty writes none. Its directory must exist on the host that sees the run end."""
    pushgateway: str = ""
    """At the end of every run, push its metrics to this Pushgateway (http://HOST:PORT), one group per
    cluster and config; empty pushes nothing."""
    timeout_s: float = 10.0
    """How long the Pushgateway may take to answer before the push is given up (the run is not)."""

    @property
    def any(self) -> bool:
        return bool(self.prometheus_textfile or self.pushgateway)

    def problems(self) -> list[str]:
        found = []
        if self.prometheus_textfile and not self.prometheus_textfile.endswith(".prom"):
            found.append(
                f"exports.prometheus_textfile: {self.prometheus_textfile!r} does not end in .prom; node_exporter's "
                "textfile collector reads only *.prom files"
            )
        if self.pushgateway:
            why = url_problem(self.pushgateway)
            if why:
                found.append(f"exports.pushgateway: {self.pushgateway!r} {why}; allowed: http(s)://HOST[:PORT][/PATH]")
        if not self.timeout_s > 0:
            found.append(f"exports.timeout_s: {self.timeout_s:g} must be > 0")
        return found


def url_problem(url: str) -> str:
    """What is wrong with a Pushgateway URL, in words; '' when it is an http(s) URL with a host."""
    try:
        parsed = urllib.parse.urlsplit(url)
        port = parsed.port
    except ValueError as error:
        return f"is not a URL ({error})"
    if parsed.scheme not in ("http", "https"):
        return "is not an http or https URL"
    if not parsed.hostname:
        return "names no host"
    if port == 0:
        return "names port 0"
    if any(ch.isspace() for ch in url):
        return "holds white space"
    if parsed.query or parsed.fragment:
        return "has a query or fragment, which the push cannot carry"
    return ""
