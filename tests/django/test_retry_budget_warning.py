"""From the Django layer, RetryBudgetWarning names the setting the reader holds: DYNALOCK["BOTO_CONFIG"]."""

from __future__ import annotations

import pytest
from django.test import override_settings

from dynalock_django.client import close_client, get_client
from dynalock_django.dynamodb import RetryBudgetWarning


def test_botocores_defaults_in_the_setting_are_warned_about_in_the_settings_words():
    slow = {"TABLE_NAME": "locks", "REGION_NAME": "us-east-1", "BOTO_CONFIG": {}}  # 60 s time-outs x 4 attempts
    with override_settings(DYNALOCK=slow):
        try:
            with pytest.warns(RetryBudgetWarning, match="may block for 487s") as warned:
                assert get_client().dynamodb is not None  # the boto3 client is made: no request is sent
        finally:
            close_client(release=False)
    (warning,) = warned
    assert 'set DYNALOCK["BOTO_CONFIG"] = {"connect_timeout": 1, "read_timeout": 2, ' in str(warning.message)
    assert "LEASE_DURATION" in str(warning.message)
