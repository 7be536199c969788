"""A run_function for the comparison suite's coordinate_worker case: it
overruns any short lease (the parent worker is expected to stop it)."""
import time


def run_sleep(work_unit):
    time.sleep(60)
