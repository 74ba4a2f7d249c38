"""The autotuner (acm_tune.h) from Python: candidates measured on the domain itself,
progress reported as it goes, the result as plain records."""
from __future__ import annotations

import ctypes
import dataclasses
import os
from typing import Any, Callable, Optional

from . import _capi
from ._capi import fn
from ._handle import record, versioned
from .errors import check
from .layout import Layout


@dataclasses.dataclass(frozen=True)
class TuneProgress:
    """What the progress callback hears after each measured candidate."""
    done: int
    planned: int
    elapsed_s: float
    stage: str
    candidate: str
    candidate_ms: float
    best_ms: float


@dataclasses.dataclass(frozen=True)
class TuneEntry:
    """One measured candidate; status 0 or why it was discarded (message)."""
    layout: str
    stage: int
    status: int
    ms_per_step: float
    mlups: float
    steps: int
    message: str


@dataclasses.dataclass(frozen=True)
class TuneSummary:
    entries: int
    best: int
    default_entry: int
    worst: int
    failed: int
    seconds: float
    cache_hit: int
    budget_reached: int
    best_layout: str
    not_tuned: str


@dataclasses.dataclass(frozen=True)
class TuneResult:
    """The best layout, the summary of the search and every entry."""
    best: Layout
    summary: TuneSummary
    entries: list

    def write_csv(self, path: "str | os.PathLike[str]") -> None:
        """The entries as CSV, one row per candidate."""
        import csv
        with open(path, "w", newline="") as f:
            w = csv.writer(f)
            names = [x.name for x in dataclasses.fields(TuneEntry)]
            w.writerow(names)
            for e in self.entries:
                w.writerow([getattr(e, n) for n in names])


def autotune(domain, time_budget: float, window_steps: int, flags: int,
             cache: Optional[str], progress: Optional[Callable[[TuneProgress], Any]],
             apply: bool) -> TuneResult:
    o = _capi.TuneOptions()
    check(fn.acm_tune_options_init(ctypes.byref(o), o.VERSION))
    o.time_budget_s = float(time_budget)
    o.window_steps = int(window_steps)
    o.flags = int(flags)
    o.cache_path = os.fsencode(cache) if cache is not None else None
    if progress is not None:
        pending = domain._pending

        def trampoline(p, _user):
            try:
                return 1 if progress(record(TuneProgress, p.contents)) else 0
            except BaseException as e:  # noqa: BLE001 -- re-raised by autotune()
                pending.append(e)
                return 1

        o.progress = _capi.TUNE_PROGRESS_FN(trampoline)
    best = Layout()
    report = ctypes.c_void_p()
    domain._run(fn.acm_domain_autotune, ctypes.byref(o), best.handle, ctypes.byref(report))
    try:
        s = versioned(_capi.TuneSummary)
        check(fn.acm_tune_report_summary(report, ctypes.byref(s)))
        summary = record(TuneSummary, s)
        entries = []
        for i in range(summary.entries):
            e = versioned(_capi.TuneEntry)
            check(fn.acm_tune_report_entry(report, i, ctypes.byref(e)))
            entries.append(record(TuneEntry, e))
    finally:
        fn.acm_tune_report_destroy(report)
    if apply:
        domain.layout = best
    return TuneResult(best, summary, entries)


__all__ = ["TuneProgress", "TuneEntry", "TuneSummary", "TuneResult"]
