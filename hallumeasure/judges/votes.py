"""Several votes per claim: the same judge asked K times (``--repeats``), or a panel of judges.

A repeat and a panel member are the same thing here: a *voter*, one judge asked once. Every voter
judges every claim; its answers are kept as ``Vote`` rows, and the claim's verdict is combined
from them by an explicit rule:

- ``majority``: the label with the most votes. A tie goes to the more severe label, in the order
  contradicted > absent > partially_supported > unevaluatable > supported: a claim that half of
  the votes call unsupported is not reliably supported, and a tool that gates releases should
  err towards flagging it.
- ``any-unsupported``: unsupported (under the policy) as soon as one vote says so; the label is
  then the majority among the unsupported votes.
- ``unanimous``: unsupported only when every vote says so; otherwise the majority among the
  votes that do not.

A failed vote (the judge gave no usable answer on that repeat) is an error vote: stored, counted,
and treated as a vote that could have gone any way. The claim's verdict stands only when no
answer of the failed voters could have changed it under the rule; otherwise the claim is an
error row that says how many votes failed. So a failure never silently turns a 3-vote majority
into a 2-vote one.

Repeats of one judge differ only in their request's ``repeat`` index, which keys the request
cache: each repeat is paid for once, and a re-run answers every repeat from the cache.
"""

from __future__ import annotations

import asyncio
import copy
from collections import Counter
from collections.abc import Callable, Sequence
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from hallumeasure.core.errors import ConfigError, RunStoppedError
from hallumeasure.core.labels import Label, Policy
from hallumeasure.core.types import Claim, ClaimVerdict, Mode, Sample, Usage, Vote
from hallumeasure.judges.protocols import (
    ClaimJudge,
    ComposedStage,
    Judgement,
    ModelStage,
    MultiPromptStage,
    PromptedStage,
    RepeatableJudge,
    VotingStage,
    WarmableJudge,
)
from hallumeasure.registry import is_keyless, model_spec

if TYPE_CHECKING:
    from hallumeasure.judges.llm.prompts import Prompt
    from hallumeasure.models.model import Model


class PanelRule(StrEnum):
    """How the votes on a claim become its verdict."""

    MAJORITY = "majority"
    ANY_UNSUPPORTED = "any-unsupported"
    UNANIMOUS = "unanimous"


#: Most severe first: the order that breaks ties between labels with as many votes.
SEVERITY = (Label.CONTRADICTED, Label.ABSENT, Label.PARTIALLY_SUPPORTED, Label.UNEVALUATABLE, Label.SUPPORTED)
TIE_RULE = "ties go to the more severe label: contradicted > absent > partially_supported > unevaluatable > supported"
ERROR_RULE = (
    "a failed vote could have gone any way: the verdict stands only when no answer of the failed votes "
    "could change it, else the claim is an error row"
)
#: Most repeats one run may ask for.
MAX_REPEATS = 50


class VoteSettings(BaseModel):
    """How a run's claims were voted on, recorded in the manifest (``settings.judge.votes``)."""

    judges: list[str] = Field(description="the panel's judges (one for repeats of a single judge)")
    repeats: int = Field(ge=1, description="how many times each judge was asked per claim")
    rule: PanelRule
    tie_rule: str = TIE_RULE
    error_rule: str = ERROR_RULE
    sampling: dict[str, str] = Field(
        default_factory=dict, description="judge -> how its answers may differ between repeats"
    )


def repeatable(judge: ClaimJudge) -> bool:
    """Whether ``judge`` can be asked again with a new repeat index (an LLM claim judge can)."""
    return isinstance(judge, RepeatableJudge)


def repeat_refusal(judge_name: str, repeats: int) -> str:
    """Why ``--repeats`` cannot be used with a judge that cannot be repeated (a keyless judge: offline, nli)."""
    why = (
        "is deterministic, so its repeats would agree by construction"
        if is_keyless(judge_name)
        else "cannot be repeated (repeats need an LLM claim judge, --detector claims)"
    )
    return (
        f"--repeats {repeats}: the {judge_name} judge {why}; use --repeats 1 with it, "
        "or an LLM judge such as --judge anthropic:<model>"
    )


def _sampling(judge: ClaimJudge) -> str:
    if not repeatable(judge):
        return "deterministic (no model is sampled; every repeat would give the same verdict)"
    model = judge.model if isinstance(judge, ModelStage) else None
    return model.api.sampling() if model is not None else "unknown"


def _repeat_of(judge: ClaimJudge, repeat: int) -> ClaimJudge:
    """A copy of ``judge`` that asks repeat ``repeat`` (it shares the model, hence the cache and usage)."""
    if repeat == 0:
        return judge
    if not isinstance(judge, RepeatableJudge):
        raise ConfigError(repeat_refusal(judge.name, repeat + 1))
    twin = copy.copy(judge)
    twin.repeat = repeat
    return twin


class VotingJudge(VotingStage, PromptedStage, MultiPromptStage, ComposedStage):
    """Asks every judge ``repeats`` times per claim and combines the votes by ``rule``.

    ``judges`` must have distinct names. A deterministic judge (offline) cannot be repeated: its
    repeats would agree by construction and make the stability numbers meaningless.
    """

    def __init__(
        self,
        judges: Sequence[ClaimJudge],
        *,
        repeats: int = 1,
        rule: PanelRule | str = PanelRule.MAJORITY,
        policy: Policy | None = None,
    ) -> None:
        if not judges:
            raise ConfigError("a panel needs at least one judge")
        names = [j.name for j in judges]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ConfigError(
                f"--judge {twice[0]} is given twice; a panel needs different judges "
                "(use --repeats to ask one judge several times)"
            )
        if not 1 <= repeats <= MAX_REPEATS:
            raise ConfigError(f"--repeats must be between 1 and {MAX_REPEATS}, got {repeats}")
        fixed = [j.name for j in judges if not repeatable(j)]
        if repeats > 1 and fixed:
            raise ConfigError(repeat_refusal(fixed[0], repeats))
        try:
            self.rule = PanelRule(rule)
        except ValueError:
            raise ConfigError(f"--panel-rule must be one of {[r.value for r in PanelRule]}, got {rule!r}") from None
        self.judges = list(judges)
        self.repeats = repeats
        self.policy = policy or Policy()
        self.voters = [_repeat_of(j, k) for j in self.judges for k in range(repeats)]
        self.name = names[0] if len(names) == 1 else f"panel({self.rule.value}): {', '.join(names)}"
        #: The first judge's prompt, recorded in the manifest like a single judge's; the other judges'
        #: prompts (and the prompts behind them) are recorded too.
        self.prompt: Prompt | None = _prompt_of(self.judges[0])
        self.extra_prompts: list[Prompt] = [p for j in self.judges[1:] if (p := _prompt_of(j)) is not None]
        self.extra_prompts += [p for j in self.judges if isinstance(j, MultiPromptStage) for p in j.extra_prompts]

    def members(self) -> list[ClaimJudge]:
        """The panel's judges (their repeats share their models)."""
        return self.judges

    def vote_settings(self) -> VoteSettings:
        return VoteSettings(
            judges=[j.name for j in self.judges],
            repeats=self.repeats,
            rule=self.rule,
            sampling={j.name: _sampling(j) for j in self.judges},
        )

    def settings(self) -> dict[str, Any]:
        members = {j.name: j.settings() for j in self.judges}
        return {
            "votes": self.vote_settings().model_dump(mode="json"),
            **(next(iter(members.values())) if len(members) == 1 else {"members": members}),
        }

    async def judge(self, sample: Sample, claims: Sequence[Claim]) -> Judgement:
        if not claims:
            return Judgement()

        # Repeats of one judge share a prompt prefix: the first repeat goes alone, so that the others
        # read the provider's prompt cache instead of each writing it (unless the judge does not warm
        # the cache: --no-warm-cache, or batch mode, where it would cost a batch round trip).
        # Different judges go at once.
        async def one_judge(repeats: list[ClaimJudge]) -> list[Judgement | BaseException]:
            if not (isinstance(repeats[0], WarmableJudge) and repeats[0].warms_cache):
                return list(await asyncio.gather(*(_safe(j, sample, claims) for j in repeats)))
            first = await _safe(repeats[0], sample, claims)
            rest = await asyncio.gather(*(_safe(j, sample, claims) for j in repeats[1:]))
            return [first, *rest]

        per_judge = await asyncio.gather(
            *(one_judge(self.voters[i * self.repeats : (i + 1) * self.repeats]) for i in range(len(self.judges)))
        )
        votes: list[Vote] = []
        usage = Usage()
        for voter, outcome in zip(self.voters, [o for group in per_judge for o in group], strict=True):
            repeat = voter.repeat if isinstance(voter, RepeatableJudge) else 0
            if isinstance(outcome, BaseException):
                error = f"{type(outcome).__name__}: {outcome}"
                votes += [Vote(claim_id=c.id, judge=voter.name, repeat=repeat, error=error) for c in claims]
                continue
            usage = usage + outcome.usage
            by_id = {v.claim_id: v for v in outcome.verdicts}
            for c in claims:
                verdict = by_id.get(c.id) or ClaimVerdict(
                    claim_id=c.id, judge=voter.name, error="the judge returned no verdict"
                )
                votes.append(Vote(**verdict.model_dump(exclude={"judge"}), judge=voter.name, repeat=repeat))
        by_claim: dict[str, list[Vote]] = {}
        for vote in votes:
            by_claim.setdefault(vote.claim_id, []).append(vote)
        verdicts = [combine_votes(by_claim[c.id], self.rule, self.policy, judge=self.name) for c in claims]
        return Judgement(verdicts=verdicts, usage=usage, votes=votes)


def _prompt_of(stage: object) -> Prompt | None:
    return stage.prompt if isinstance(stage, PromptedStage) else None


async def _safe(judge: ClaimJudge, sample: Sample, claims: Sequence[Claim]) -> Judgement | BaseException:
    """A judge's answer, or the exception it raised (one failed voter must not lose the others' votes)."""
    try:
        return await judge.judge(sample, claims)
    except RunStoppedError:
        raise  # the run stops: no vote of this sample may be stored as an error
    except Exception as exc:  # noqa: BLE001 - becomes error votes
        return exc


# --- combining votes ---------------------------------------------------------------------------------


def plurality(counts: Counter[Label]) -> Label:
    """The label with the most votes; ties go to the more severe label (``SEVERITY``)."""
    return max(counts, key=lambda label: (counts[label], -SEVERITY.index(label)))


def decide_label(ok: list[Label], n_failed: int, rule: PanelRule, policy: Policy) -> Label | None:
    """The combined label of the ``ok`` votes, or None when the ``n_failed`` failed votes could change it."""
    if rule is PanelRule.MAJORITY:
        counts = Counter(ok)
        winner = plurality(counts)
        # The failed votes, all for one other label, are the only way to overturn the winner.
        if n_failed and any(
            plurality(counts + Counter({other: n_failed})) != winner for other in SEVERITY if other != winner
        ):
            return None
        return winner
    unsupported = [label for label in ok if policy.is_unsupported(label)]
    rest = [label for label in ok if not policy.is_unsupported(label)]
    if rule is PanelRule.ANY_UNSUPPORTED:
        if unsupported:
            return plurality(Counter(unsupported))
        return None if n_failed else plurality(Counter(rest))
    if rest:  # unanimous: one vote that is not unsupported is enough to clear the claim
        return plurality(Counter(rest))
    return None if n_failed else plurality(Counter(unsupported))


def combine_votes(votes: Sequence[Vote], rule: PanelRule | str, policy: Policy, *, judge: str) -> ClaimVerdict:
    """The verdict on one claim from its votes (see the module docstring for the rules)."""
    rule = PanelRule(rule)
    ok = [v for v in votes if v.ok]
    failed = [v for v in votes if not v.ok]
    claim_id = votes[0].claim_id
    if not ok:
        return ClaimVerdict(
            claim_id=claim_id, judge=judge, error=f"all {len(votes)} votes failed; the first: {failed[0].error}"
        )
    labels = [v.label for v in ok if v.label is not None]  # all of them: a vote is ok when it has a label
    label = decide_label(labels, len(failed), rule, policy)
    tally = ", ".join(f"{n} {lab.value}" for lab, n in Counter(labels).most_common())
    if label is None:
        return ClaimVerdict(
            claim_id=claim_id,
            judge=judge,
            error=(
                f"{len(failed)} of {len(votes)} votes failed (first: {failed[0].error}); the other votes "
                f"({tally}) do not decide the {rule.value} verdict on their own"
            ),
        )
    winners = [v for v in ok if v.label == label]
    subtype = Counter(v.subtype for v in winners).most_common(1)[0][0]
    example = next(v for v in winners if v.subtype == subtype)
    share = [
        v.probability if v.probability is not None else float(policy.is_unsupported(v.label))  # type: ignore[arg-type]
        for v in ok
    ]
    note = f"[{len(votes)} votes: {tally}" + (f"; {len(failed)} failed" if failed else "") + "] "
    return ClaimVerdict(
        claim_id=claim_id,
        judge=judge,
        label=label,
        subtype=subtype,
        label_reason=note + (example.label_reason or ""),
        subtype_reason=example.subtype_reason,
        probability=sum(share) / len(share),
    )


def build_voting_judge(
    specs: Sequence[str],
    mode: Mode | str,
    *,
    repeats: int = 1,
    rule: PanelRule | str = PanelRule.MAJORITY,
    policy: Policy | None = None,
    model_for: Callable[[str], Model] | None = None,
) -> ClaimJudge:
    """The claim judge for ``--judge A [--judge B ...] --repeats K``: the plain judge when one judge
    answers once (a run without votes, as before), else a ``VotingJudge``."""
    from hallumeasure.judges.build import build_judge, build_model

    model_for = model_for or build_model
    judges = [
        build_judge(spec, mode, model=None if (llm := model_spec(spec)) is None else model_for(llm)) for spec in specs
    ]
    if len(judges) == 1 and repeats == 1:
        return judges[0]
    return VotingJudge(judges, repeats=repeats, rule=rule, policy=policy)
