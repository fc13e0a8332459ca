"""Background jobs with a real retry policy; django-q2 only triggers them.

Apps declare handlers in their ``tasks.py`` as ``JOB_HANDLERS = {"kind": handler}`` where
``handler(payload, run)`` does the work; ``job_enqueue`` queues one; the ``jobs_tick`` schedule
and ``manage.py run_jobs`` claim and run due jobs.
"""
