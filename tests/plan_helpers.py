"""Walking explain plan trees in engine tests (shared by the explain and fidelity tests)."""
from __future__ import annotations


def stages(plan: dict) -> list[str]:
    """Stage names from the root down, following the first input at each level."""
    out = []
    while plan:
        out.append(plan["stage"])
        plan = plan.get("inputStage") or (plan.get("inputStages") or [None])[0]
    return out


def find_stage(plan: dict, name: str):
    """The first stage called ``name`` in the tree (depth first), or None."""
    if plan.get("stage") == name:
        return plan
    for c in [plan.get("inputStage")] + list(plan.get("inputStages") or []):
        if c:
            r = find_stage(c, name)
            if r:
                return r
    return None
