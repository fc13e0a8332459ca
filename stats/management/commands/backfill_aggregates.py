"""``manage.py backfill_aggregates``: run, inspect, reset or dry-run ``daily_aggregates_v1``;
``--reconcile`` runs one pass of the reconciliation of late days (``stats.reconcile``)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from stats.backfill import (
    JOB_NAME,
    Limits,
    SliceReport,
    backfill_dry_run,
    backfill_reset,
    backfill_run,
    state_get,
)
from stats.models import DailyCoverage
from stats.reconcile import reconcile_run
from telegram_bot.state import get_store


class Command(BaseCommand):
    help = (
        "Move the KV daily counters into stats_daily_user (absolute values, never lowering a "
        "cell), phase by phase, then verify every column of each closed day (finalize). "
        "Resumes a run that is under way."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--status", action="store_true", help="show the job state and exit")
        parser.add_argument("--reset", action="store_true", help="forget the current run")
        parser.add_argument(
            "--dry-run", action="store_true", help="report what a run would change; write nothing"
        )
        parser.add_argument(
            "--force", action="store_true", help="start a new run even if none is due"
        )
        parser.add_argument(
            "--reconcile",
            action="store_true",
            help="re-verify closed days that got late messages (one bounded pass) and exit",
        )
        parser.add_argument("--max-seconds", type=float, help="stop (resumable) after this long")
        parser.add_argument("--max-keys", type=int, help="keys per slice, 1-10000 (default 5000)")
        parser.add_argument(
            "--max-reads", type=int, help="KV values read per slice, 35-100000 (default 12000)"
        )
        parser.add_argument(
            "--max-statements",
            type=int,
            help="rows written per slice, 6-100000 (default 12000; each table's rows go in "
            "one statement)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["reset"]:
            state = backfill_reset()
            self.stdout.write(f"{JOB_NAME} reset (revision {state.revision}).")
            return
        if options["status"]:
            self._status()
            return
        if options["dry_run"]:
            self._dry_run()
            return
        if options["reconcile"]:
            done = reconcile_run()
            self.stdout.write(
                f"reconciliation: {done.outcome} ({done.days} days: {done.verified} verified, "
                f"{done.reopened} reopened)"
            )
            return
        try:
            limits = Limits.from_settings(
                max_keys=options["max_keys"],
                max_reads=options["max_reads"],
                max_statements=options["max_statements"],
            )
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        report = backfill_run(
            limits=limits,
            force=options["force"],
            max_seconds=options["max_seconds"],
            progress=self._progress,
        )
        messages = {
            "done": "run complete",
            "paused": f"paused in phase {report.phase}; run again to resume",
            "lease_lost": f"lease lost to another worker ({report.rejected_writes} writes "
            "rejected)",
            "busy": "another worker holds the lease; nothing done",
            "idle": "nothing due (no day closed and nothing poisoned since the last run); "
            "--force starts a run anyway",
        }
        self.stdout.write(
            f"{JOB_NAME}: {messages[report.outcome]} ({report.slices} slices, {report.keys} keys)"
        )
        if report.outcome == "lease_lost":
            raise CommandError("lease lost")

    def _progress(self, report: SliceReport) -> None:
        lease = report.lease
        where = lease.phase or "finished"
        self.stdout.write(
            f"  {report.phase:<15} +{report.keys:>3} keys, {report.reads:>3} reads, "
            f"{report.statements:>3} statements | total {lease.keys_done} keys, next: {where}"
        )

    def _status(self) -> None:
        state = state_get()
        if state is None:
            self.stdout.write(f"{JOB_NAME}: never run")
            return
        lease = (
            f"{state.lease_owner} until {state.lease_expires_at:%Y-%m-%d %H:%M:%S}"
            if state.lease_owner and state.lease_expires_at
            else "free"
        )
        lines = [
            f"{JOB_NAME} (state version {state.version}, revision {state.revision})",
            f"  status:     {state.status}",
            f"  phase:      {state.phase or '-'} (step {state.phase_step})",
            f"  cursor:     {state.cursor or '-'} (+{len(state.page_done or [])} done in page)",
            f"  cutoff day: {state.cutoff_day or '-'}",
            f"  progress:   {state.keys_done} keys in {state.slices_done} slices",
            f"  lease:      {lease}",
            f"  finished:   {state.finished_at or '-'}",
        ]
        counts: dict[str, int] = {}
        for status in DailyCoverage.objects.values_list("status", flat=True):
            counts[status] = counts.get(status, 0) + 1
        poisoned = DailyCoverage.objects.filter(poisoned_at__isnull=False).count()
        summary = ", ".join(f"{name} {count}" for name, count in sorted(counts.items()))
        lines.append(f"  coverage:   {summary or 'empty'}; poisoned {poisoned}")
        self.stdout.write("\n".join(lines))

    def _dry_run(self) -> None:
        report = backfill_dry_run(store=get_store())
        families = ", ".join(f"{name} {n}" for name, n in sorted(report.keys_per_family.items()))
        self.stdout.write(
            f"{JOB_NAME} dry run, cutoff {report.cutoff_day} (nothing written):\n"
            f"  keys:  {families or 'none'}\n"
            f"  rows:  {report.rows} ({report.rows_to_change} would change)\n"
            f"  days:  {report.days_complete} would be complete, {report.days_mismatch} "
            f"message_count_mismatch, {report.days_missing_total} missing_activity_total"
        )
