"""Channels: what each run of an evaluation searches with (see :mod:`ptah.services.channels.base`).

Importing this package registers ptah's own channels -- ``vector`` (exact, or
through an index), ``lexical`` and ``hybrid`` -- in that order.
"""

from ptah.services.channels import vector  # noqa: F401, I001  (registers the channels, in this order)
from ptah.services.channels import lexical  # noqa: F401, I001
from ptah.services.channels import hybrid  # noqa: F401, I001
from ptah.services.channels.base import (
    Channel,
    RunPlan,
    Sides,
    channel,
    channel_names,
    plan_runs,
    register_channel,
)

__all__ = [
    "Channel",
    "RunPlan",
    "Sides",
    "channel",
    "channel_names",
    "plan_runs",
    "register_channel",
]
