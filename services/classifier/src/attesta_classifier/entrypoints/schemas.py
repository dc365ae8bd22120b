"""Where the classifier's answers go beyond the shared API contract
(``attesta_contracts.api.classifier``) this round: subclasses that only *add* fields (issue #25:
the position of the brand in each answer, the run's source and collection method, model build
changes), so a client written against the contract reads every answer unchanged. The gateway
passes the classifier's JSON through as it comes; folding these fields into the contract (and so
into the gateway's OpenAPI document) is the contract owner's step.
"""

from __future__ import annotations

from datetime import date

from pydantic import BaseModel, Field

from attesta_contracts.api import classifier as api
from attesta_contracts.runs import ModelBuild


class PositionFigures(BaseModel):
    """Where the answers name the brand against its competitors (docs/metrics.md "Position"),
    over the row's classified answers whose position was computed."""

    answers: int = Field(description="classified answers with a computed position")
    named: int = Field(description="of them, the answers that name the brand")
    prompts: int = Field(description="distinct prompts of those answers")
    mean: api.PromptRate = Field(description="mean place where named (1 = first; a place, not "
                                             "a share), bootstrap over prompts; n = named")
    first: api.Rate = Field(description="share of answers naming the brand before any "
                                        "competitor, Wilson; n = answers")
    weighted_visibility: api.PromptRate = Field(
        description="mean position weight, 0.9^(k-1) for the k-th named and 0 when not named, "
                    "bootstrap over prompts; n = answers")


class MetricRow(api.MetricRow):
    position: PositionFigures | None = None
    collection_method: str | None = Field(
        default=None, description="how the row's answers were collected (rows are split by it "
                                  "unless collection_method=any was asked; null: every method "
                                  "together, or runs that did not record one)")


class MetricsSegment(api.MetricsSegment):
    source: str | None = None
    include_chats: bool = False
    collection_method: str | None = None


class BuildChange(BaseModel):
    """From ``day`` (UTC) on, the engine's answers came from another model build (the one most
    of that day's runs reported)."""

    engine: str
    day: date
    model_build: ModelBuild
    previous: ModelBuild


class MetricsResponse(api.MetricsResponse):
    rows: list[MetricRow]  # type: ignore[assignment]
    totals: list[MetricRow] = Field(default_factory=list)  # type: ignore[assignment]
    segment: MetricsSegment = Field(default_factory=MetricsSegment)
    build_changes: list[BuildChange] = Field(
        default_factory=list, description="per engine, each day its reported model build "
                                          "changed in the window (the charts mark them)")


# Named apart from the contract's models they extend, which the same app still serves elsewhere
# (the run list, reclassification): one schema name, one shape.
class PositionedBrandState(api.RunBrandState):
    position: int | None = Field(default=None, description="the brand's place among it and its "
                                                          "competitors, in the order the answer "
                                                          "first names them; null: not named")
    named_order: list[str] | None = Field(
        default=None, description="the brand ids named, in that order (null: not computed)")


class RunDetail(api.RunView):
    brands: list[PositionedBrandState]  # type: ignore[assignment]
    collection_method: str | None = Field(
        default=None, description="the engine's declared collection method: api, "
                                  "api_with_search, assistant (null: not recorded)")
    model_build: ModelBuild | None = Field(
        default=None, description="the model build the endpoint reported (null: none)")
