"""Idempotency keys on a heartbeated lease: a retried request (or any work) is done once per key.

``@idempotent()`` for views (:mod:`.view_decorator`), ``with idempotency(key) as attempt:`` for any code
(:mod:`.attempt`). The package is named ``idempotency_keys`` so that ``dynalock_django.idempotency`` stays
the function: a subpackage of that name would replace it as the package's attribute once imported.
"""

from .attempt import Idempotency, IdempotencyAttempt, idempotency
from .view_decorator import idempotent

__all__ = ["Idempotency", "IdempotencyAttempt", "idempotency", "idempotent"]
