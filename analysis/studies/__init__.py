"""The studies whose claims the report tests, one module each, and all their claims in report order.

Each module (dlbench, wu, shi, ilkarman, shams) holds its claims' check functions and exports STUDY
(the name the report prints) and CLAIMS. STUDIES fixes the order of the studies in the report;
CLAIMS is the one list of every claim, in that order. The shared machinery is analysis.claims.
"""

from __future__ import annotations

from types import ModuleType

from analysis.claims import Claim
from analysis.studies import dlbench, ilkarman, shams, shi, wu

STUDIES: tuple[ModuleType, ...] = (dlbench, wu, shi, ilkarman, shams)
CLAIMS: list[Claim] = [claim for study in STUDIES for claim in study.CLAIMS]
