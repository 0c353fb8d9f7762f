"""The environment variables the task tests give the worker processes they start (read in jobs.py, chaos_jobs.py)."""

BROKER = "DYNALOCK_TEST_BROKER"  # the Celery broker's URL (a test's redis-server); unset: eager, in memory
RUNS = "DYNALOCK_TEST_RUNS"  # the file the tasks write their runs to (and .skipped, .started, .prerun beside it)
VISIBILITY = "DYNALOCK_TEST_VISIBILITY"  # seconds: the broker hands an unacknowledged task out again after it
EVENTS = "DYNALOCK_TEST_EVENTS"  # the chaos run's directory of event files (tests/chaos/history.py)
