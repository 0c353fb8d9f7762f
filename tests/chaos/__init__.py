"""The fault-injection run: real processes, a faulty proxy, a recorded history, a checker.

python -m tests.chaos            # every workload (make chaos)
python -m tests.chaos --short    # the short version that the test suite runs
"""
