"""The comparisons as rows (ours, reference, ratio, target), printed, saved, and written into
``docs/performance.md`` between its generated-block markers."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

__all__ = ["Row", "comparisons", "print_rows", "write_doc"]

DOC = Path(__file__).resolve().parent.parent / "docs" / "performance.md"
BEGIN = "<!-- bench:begin (written by `make bench`; edit around it, not inside) -->"
END = "<!-- bench:end -->"


#: Random legal steps a second through the bare step space, on one core: the target.
STEPS_TARGET = 20_000.0


@dataclass
class Row:
    """One comparison: ``ratio`` is always ours / reference, and ``target`` bounds it."""

    key: str
    what: str
    ours: float | None
    reference: float | None
    unit: str
    target: str  # ">= 0.5", "<= 2", "< 3"; "" for a figure shown without a target
    ref_name: str
    note: str = ""

    @property
    def ratio(self) -> float | None:
        if self.ours is None or not self.reference:
            return None
        return self.ours / self.reference

    @property
    def met(self) -> bool | None:
        r = self.ratio
        if r is None or math.isnan(r) or not self.target:
            return None
        op, value = self.target.split()
        bound = float(value)
        return {">=": r >= bound, "<=": r <= bound, "<": r < bound, ">": r > bound}[op]

    def record(self) -> dict[str, Any]:
        out = asdict(self)
        out["ratio"] = None if self.ratio is None else round(self.ratio, 3)
        out["met"] = self.met
        return out


def _get(data: dict[str, Any], *path: str) -> Any:
    for p in path:
        if not isinstance(data, dict) or p not in data:
            return None
        data = data[p]
    return data


def comparisons(results: dict[str, Any]) -> list[Row]:
    """Every comparison the results hold."""
    rows: list[Row] = []
    cmd = results.get("commands") or {}
    echo = cmd.get("echo")
    for mode, label in (("rami_unary", "unary Act"), ("rami_stream", "Play stream")):
        ours = cmd.get(mode)
        if not (echo and ours):
            continue
        tag = "" if mode == "rami_unary" else "s"
        shape = f"{ours['tables']}x{ours['seats']}"
        rows += [
            Row(
                f"1a{tag}",
                f"commands/s, {label}, {shape} bots",
                ours["calls_per_s"],
                echo["calls_per_s"],
                "calls/s",
                ">= 0.5",
                "grpc.aio unary echo",
            ),
            Row(
                f"1b{tag}",
                f"server CPU per command, {label}",
                ours["server_cpu_per_call_us"],
                echo["server_cpu_per_call_us"],
                "us",
                "<= 2",
                "per echo call",
            ),
            Row(
                f"3a{tag}",
                f"latency p50 to the last watcher, {label}",
                ours["latency_ms"]["p50"],
                echo["latency_ms"]["p50"],
                "ms",
                "",
                "echo p50",
                "no target: shown beside p99",
            ),
            Row(
                f"3b{tag}",
                f"latency p99 to the last watcher, {label}",
                ours["latency_ms"]["p99"],
                echo["latency_ms"]["p99"],
                "ms",
                "< 3",
                "echo p99",
            ),
        ]
    dl = results.get("delivery") or {}
    bc = dl.get("broadcast")
    for mode, label in (("rami_unary", "unary Act"), ("rami_stream", "Play stream")):
        ours = dl.get(mode)
        if not (bc and ours):
            continue
        tag = "" if mode == "rami_unary" else "s"
        n = ours["tables"] * ours["seats"]
        rows += [
            Row(
                f"2{tag}",
                f"updates/s delivered to {n} watchers, {label}",
                ours["delivered_per_s"],
                bc["delivered_per_s"],
                "updates/s",
                ">= 0.5",
                f"grpc.aio stream broadcast to {n}",
            ),
            Row(
                f"2c{tag}",
                f"server CPU per delivered update, {label}",
                ours["server_cpu_per_delivery_us"],
                bc["server_cpu_per_delivery_us"],
                "us",
                "",
                "per broadcast message",
                "no target: shown for the cause",
            ),
        ]
    relay = dl.get("relay")
    if bc and relay:
        for mode, label in (("rami_unary", "unary Act"), ("rami_stream", "Play stream")):
            ours = dl.get(mode)
            if not ours:
                continue
            tag = "" if mode == "rami_unary" else "s"
            rows.append(
                Row(
                    f"2r{tag}",
                    f"updates/s delivered, {label}, against the bare relay",
                    ours["delivered_per_s"],
                    relay["delivered_per_s"],
                    "updates/s",
                    "",
                    "grpc.aio relay, the same turns and watchers",
                    "no target: what the game costs over the shape's bound",
                )
            )
        rows.append(
            Row(
                "2-relay",
                "updates/s of the bare relay (the shape of (2) without the game)",
                relay["delivered_per_s"],
                bc["delivered_per_s"],
                "updates/s",
                "",
                "grpc.aio stream broadcast",
                "no target: the bound a turn-taken load has against the broadcast",
            )
        )
    eng = results.get("engine") or {}
    ours_sp = eng.get("self_play") or {}
    for peer, key, target in (("open_spiel", "openspiel", ">= 1"), ("rlcard", "rlcard", ">= 2")):
        ref = _get(eng, "peers", key)
        ref_v = ref.get("decisions_per_s") if isinstance(ref, dict) else None
        why = "" if ref_v else f" ({(ref or {}).get('unavailable')})"
        for variant, fig in ours_sp.items():
            if not isinstance(fig, dict) or "decisions_per_s" not in fig:
                continue  # figures of an older bench
            rows.append(
                Row(
                    f"4-{key}-{variant}",
                    f"decisions/s random self-play, {variant}",
                    fig["decisions_per_s"],
                    ref_v,
                    "decisions/s",
                    target,
                    f"{peer} gin rummy{why}",
                )
            )
    os_ref = _get(eng, "peers", "openspiel")
    os_v = os_ref.get("decisions_per_s") if isinstance(os_ref, dict) else None
    for variant, fig in (eng.get("steps") or {}).items():
        for part, short, label in (
            ("space", "space", "the step space"),
            ("env", "env", "rami.rl's Match"),
            ("pettingzoo", "pz", "the PettingZoo env"),
        ):
            rate = (fig.get(part) or {}).get("steps_per_s")
            if rate and part == "space":
                # The engine's own target: 20,000 random legal steps a second on one core.
                rows.append(
                    Row(
                        f"4s-{short}-{variant}",
                        f"random legal steps/s through {label}, {variant}",
                        rate,
                        STEPS_TARGET,
                        "steps/s",
                        ">= 1",
                        f"target {STEPS_TARGET:,.0f} steps/s on one core",
                    )
                )
            elif rate:
                rows.append(
                    Row(
                        f"4s-{short}-{variant}",
                        f"random legal steps/s through {label}, {variant}",
                        rate,
                        os_v,
                        "steps/s",
                        "",
                        "open_spiel gin rummy decisions/s (no target: a step is less than a move)",
                    )
                )
    sol = results.get("solver") or {}
    gin = sol.get("rlcard_task")
    if gin:
        ref_mean = _get(gin, "rlcard", "mean_ms")
        rows.append(
            Row(
                "5a",
                "10-card best split, mean per hand (RLCard's task)",
                gin["ours"]["mean_ms"],
                ref_mean,
                "ms",
                "<= 1",
                "RLCard get_best_meld_clusters",
            )
        )
        rows.append(
            Row(
                "5a-med",
                "10-card best split, median per hand",
                gin["ours"]["median_ms"],
                _get(gin, "rlcard", "median_ms"),
                "ms",
                "<= 1",
                "RLCard median",
            )
        )
    for jokers in (0, 1, 2):
        s = _get(sol, "ours_14", f"{jokers}_jokers")
        if s:
            rows.append(
                Row(
                    f"5b-{jokers}-med",
                    f"14-card best split, {jokers} jokers, median",
                    s["median_ms"],
                    0.2,
                    "ms",
                    "< 1",
                    "target 0.2 ms",
                )
            )
            rows.append(
                Row(
                    f"5b-{jokers}-p99",
                    f"14-card best split, {jokers} jokers, p99",
                    s["p99_ms"],
                    2.0,
                    "ms",
                    "< 1",
                    "target 2 ms",
                )
            )
    mem = results.get("memory")
    if mem:
        rows.append(
            Row(
                "6a",
                f"server RSS with {mem['tables']} idle tables",
                mem["with_tables_mb"],
                100.0,
                "MB",
                "< 1",
                "target 100 MB",
            )
        )
        rows.append(
            Row(
                "6b",
                "server memory per connected watcher",
                mem["per_watcher_kb"],
                30.0,
                "KB",
                "< 1",
                "target 30 KB",
            )
        )
        bare = _get(mem, "bare_stream", "per_stream_kb")
        if bare:
            rows.append(
                Row(
                    "6b-bare",
                    "per watcher, against a bare grpc.aio server's idle stream",
                    mem["per_watcher_kb"],
                    bare,
                    "KB",
                    "",
                    "bare stream, its own connection",
                    "no target: what Rami adds to the library's own cost",
                )
            )
            rows.append(
                Row(
                    "6c",
                    "bare grpc.aio server memory per idle stream (own connection)",
                    bare,
                    30.0,
                    "KB",
                    "",
                    "target 30 KB",
                    "no target: the library's floor under (6b)",
                )
            )
    return rows


def ratio_text(row: dict[str, Any], key: str, fmt: Callable[[Any], str]) -> str:
    """A before/after ratio, with the range of its rounds when there were several."""
    value, spread = row.get(key), row.get(f"{key} range")
    if value is None:
        return "-" if key == "against reference" else fmt(value)
    if not spread:
        return fmt(value)
    return f"{fmt(value)} [{fmt(spread[0])}, {fmt(spread[1])}]"


def _fmt(x: float | None) -> str:
    if not isinstance(x, int | float):
        return "n/a"
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    if abs(x) >= 10:
        return f"{x:.1f}"
    if abs(x) >= 0.1:
        return f"{x:.2f}"
    return f"{x:.4f}"


def _met(row: Row) -> str:
    if not row.target:
        return "-"
    return {True: "yes", False: "NO", None: "n/a"}[row.met]


def print_rows(rows: list[Row]) -> None:
    print(
        f"\n{'#':<24}{'comparison':<52}{'ours':>12}{'reference':>12}{'ratio':>8}"
        f"{'target':>9}{'met':>5}  unit; reference"
    )
    for r in rows:
        ratio = "n/a" if r.ratio is None else f"{r.ratio:.2f}"
        print(
            f"{r.key:<24}{r.what:<52}{_fmt(r.ours):>12}{_fmt(r.reference):>12}{ratio:>8}"
            f"{r.target:>9}{_met(r):>5}  {r.unit}; {r.ref_name}"
        )


def markdown(rows: list[Row], results: dict[str, Any], command: str) -> str:
    """The generated block of docs/performance.md."""
    meta = results.get("meta", {})
    lines = [
        BEGIN,
        "",
        f"Produced by `{command}` on {meta.get('when', '?')} ({meta.get('platform', '?')}, "
        f"{meta.get('cpus', '?')} CPUs, Python {meta.get('python', '?')}; "
        f"{meta.get('seconds', '?')} s). The figures are in `bench/results.json`.",
        "",
        "| # | comparison | ours | reference | ratio | target | met |",
        "|---|---|---:|---:|---:|---|---|",
    ]
    for r in rows:
        ratio = "n/a" if r.ratio is None else f"{r.ratio:.2f}"
        lines.append(
            f"| {r.key} | {r.what} | {_fmt(r.ours)} {r.unit} | {_fmt(r.reference)} "
            f"({r.ref_name}) | {ratio} | {'ratio ' + r.target if r.target else '-'} | "
            f"{_met(r)} |"
        )
    scaling = results.get("scaling")
    if scaling:
        most = max(row["unary"]["connections"] for row in scaling)
        lines += [
            "",
            f"Scaling: tables of 4 remote bots, spread over at most {most} connections, each "
            "row on a fresh server:",
            "",
            "| tables | mode | commands/s | server CPU/command | p50 | p99 | server RSS |",
            "|---:|---|---:|---:|---:|---:|---:|",
        ]
        for row in scaling:
            for mode in ("unary", "stream"):
                f = row.get(mode)
                if not f:
                    continue
                lines.append(
                    f"| {row['tables']} | {mode} | {_fmt(f['calls_per_s'])} | "
                    f"{_fmt(f['server_cpu_per_call_us'])} us | {_fmt(f['latency_ms']['p50'])} ms | "
                    f"{_fmt(f['latency_ms']['p99'])} ms | {_fmt(f['server_rss_mb'])} MB |"
                )
    baseline = results.get("baseline")
    if baseline:
        lines += [
            "",
            f"Before and after, measured in this same run (before: `{baseline['tree']}`"
            + (
                f"; {baseline['rounds']} rounds, each section measured for both one right "
                "after the other: medians, and in brackets the least and greatest of the "
                "rounds"
                if baseline.get("rounds", 1) > 1
                else ""
            )
            + "). "
            "*Against its reference* is after/before of the figure divided by the reference "
            "its half of the run measured (the echo, the bare relay, OpenSpiel, RLCard): the "
            "two halves are a section's length apart, and it cancels what the machine's speed "
            "did to both.",
            "",
            "| figure | before | after | after/before | against its reference |",
            "|---|---:|---:|---:|---:|",
        ]
        for r in baseline["before_after"]:
            lines.append(
                f"| {r['figure']} | {_fmt(r['before'])} {r['unit']} | {_fmt(r['after'])} "
                f"{r['unit']} | {ratio_text(r, 'after/before', _fmt)} | "
                f"{ratio_text(r, 'against reference', _fmt)} |"
            )
    lines += ["", END]
    return "\n".join(lines)


def write_doc(rows: list[Row], results: dict[str, Any], command: str) -> None:
    """Replace the generated block of docs/performance.md (the rest is left as it is)."""
    block = markdown(rows, results, command)
    if DOC.exists():
        text = DOC.read_text()
        if BEGIN in text and END in text:
            head, rest = text.split(BEGIN, 1)
            _, tail = rest.split(END, 1)
            DOC.write_text(head + block + tail)
            return
        DOC.write_text(text.rstrip() + "\n\n" + block + "\n")
        return
    DOC.write_text("# Performance\n\n" + block + "\n")


def dump(results: dict[str, Any], rows: list[Row], path: Path) -> None:
    results = dict(results)
    results["comparisons"] = [r.record() for r in rows]
    path.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")
