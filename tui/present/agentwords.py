"""What the agent should have asked (:mod:`engine.agent.advice`) and the
waste in what it was given (:mod:`engine.agent.waste`), in words, for both
front-ends: ``ctx-search --why`` prints :func:`advice_lines`; the browser's
agent view (F12) shows :func:`advice_short` under its summary and
:func:`waste_words` in it. Store-derived text is made safe here. No Textual.
"""

from __future__ import annotations

from engine.agent.advice import Advice, Delivery
from engine.agent.waste import Waste
from engine.lab.counterfactual import sentence as counterfactual_sentence

from tui.present import safe


def advice_lines(advice: Advice) -> list[str]:
    """The outcome (:meth:`Advice.sentence`), how many re-runs proved it,
    and a pipeline change outside the call's reach (``no-change`` only)."""
    lines = [safe.line(advice.sentence())]
    if advice.tried:
        ok = sum(1 for _, delivered in advice.tried if delivered)
        lines.append(f"re-ran the call {advice.reruns} time(s): {len(advice.tried)} change(s) tried, {ok} delivered it")
    if advice.pipeline_change is not None and advice.pipeline_change.change is not None:
        lines.append(
            safe.line(
                f"outside the call's reach: {counterfactual_sentence(advice.pipeline_change)} (a pipeline setting)"
            )
        )
    return lines


def delivery_words(d: Delivery) -> str:
    """``Q1 #2, answer line 14``: the query's place, the result's place among
    its results, and the line of its header in the answer."""
    return f"Q{d.query_position} #{d.position}, answer line {d.line}"


def advice_short(advice: Advice) -> str:
    """The outcome without the chunk's name (the agent view names it before):
    ``delivered: Q1 #2, answer line 14``; ``project: "global" would deliver
    it: Q1 #2, answer line 14 (4 re-runs)``; ``no change to the call delivers
    it; the pipeline's trim stage drops it (…)``; ``the call answers no
    query (an error answer)``."""
    if advice.outcome == "delivered":
        assert advice.delivery is not None
        return f"delivered: {delivery_words(advice.delivery)}"
    if advice.outcome == "change":
        assert advice.change is not None and advice.delivery is not None
        return safe.line(
            f"{advice.change.words} would deliver it: {delivery_words(advice.delivery)} "
            f"(proven by re-running the call; {advice.reruns} re-runs)"
        )
    if advice.outcome == "not-answered":
        return "the call answers no query (an error answer): fix the call first"
    text = f"no change to the call delivers it ({len(advice.tried)} tried)"
    drop = advice.dropped_by
    if drop is not None:
        text += f"; the pipeline's {drop.stage} stage drops it ({drop.message})"
    cf = advice.pipeline_change
    if cf is not None and cf.change is not None:
        text += f"; outside the call's reach: {counterfactual_sentence(cf)}"
    return safe.line(text)


def waste_words(w: Waste) -> list[str]:
    """The waste in one answer, a phrase each: the share of the 40 KB cap
    used (always), the repeated deliveries and their bytes, the snippets
    that show none of their chunk's matches."""
    out = [f"{w.cap_share:.0%} of the {w.cap_units // 1024} KiB cap ({w.cap_units_used:,} of {w.cap_units:,} units)"]
    if w.repeats:
        n = len(w.repeats)
        out.append(
            f"{n} chunk{'s' if n != 1 else ''} delivered again: {w.repeated_bytes:,} B repeated "
            f"({', '.join(f'{r.rowid} ×{len(r.deliveries)}' for r in w.repeats[:3])}"
            f"{', …' if n > 3 else ''})"
        )
    if w.matches_outside:
        n = len(w.matches_outside)
        out.append(f"{n} snippet{'s' if n != 1 else ''} show{'s' if n == 1 else ''} none of the matches")
    return out
