// PipelineSchedule: every schedule's per-rank orders run to the end for any
// shape (no rank waits forever), hold each pass exactly once on the rank
// of its stage, and with equal pass times reach the textbook bubble and
// memory bounds.
#include <fulgur/strategies/pipeline/pipeline_schedule.hpp>

#include <doctest/doctest.h>

#include <map>
#include <tuple>

namespace pipeline_schedule_test {

using fulgur::PipelineAction;
using fulgur::PipelineSchedule;
using fulgur::PipelineScheduleKind;
using Kind = PipelineAction::Kind;

namespace {

const std::vector<PipelineScheduleKind> kKinds{PipelineScheduleKind::GPipe, PipelineScheduleKind::OneFOneB,
                                               PipelineScheduleKind::Interleaved1F1B, PipelineScheduleKind::ZeroBubble};

}  // namespace

TEST_CASE("PipelineSchedule: every order finishes and runs each pass once, on its stage's rank") {
  for (auto kind : kKinds) {
    for (int64_t p = 1; p <= 5; ++p) {
      for (int64_t m = 1; m <= 12; ++m) {
        for (int64_t v = 1; v <= 3; ++v) {
          if (kind == PipelineScheduleKind::Interleaved1F1B && m % p != 0) continue;
          CAPTURE(static_cast<int>(kind));
          CAPTURE(p);
          CAPTURE(m);
          CAPTURE(v);
          const PipelineSchedule schedule(kind, p, m, v);
          CHECK_NOTHROW(schedule.simulate(1, 1, 1));
          CHECK_NOTHROW(schedule.simulate(1, 2, 0.5));
          std::map<std::tuple<int, int64_t, int64_t>, int> seen;  // kind, stage, micro-batch
          for (int64_t r = 0; r < p; ++r) {
            for (const auto& a : schedule.actions(r)) {
              CHECK(schedule.rank_of(a.stage) == r);
              ++seen[{static_cast<int>(a.kind), a.stage, a.microbatch}];
            }
          }
          const bool split = kind == PipelineScheduleKind::ZeroBubble;
          const int64_t kinds = split ? 3 : 2;
          CHECK(seen.size() == static_cast<size_t>(kinds * schedule.stages() * m));
          for (const auto& [key, count] : seen) CHECK(count == 1);
        }
      }
    }
  }
}

TEST_CASE("PipelineSchedule: with equal pass times the bubble is the textbook one; 1f1b holds at most p - r micro-batches") {
  for (auto kind : kKinds) {
    for (int64_t p : {2, 4}) {
      for (int64_t m : {4, 8, 16}) {
        CAPTURE(static_cast<int>(kind));
        CAPTURE(p);
        CAPTURE(m);
        const PipelineSchedule schedule(kind, p, m, 2);
        const auto run = schedule.simulate(1, 1, 1);
        CHECK(run.bubble == doctest::Approx(schedule.expected_bubble()).epsilon(1e-9));
        for (int64_t r = 0; r < p; ++r) {
          const int64_t peak = run.peak_in_flight[static_cast<size_t>(r)];
          if (kind == PipelineScheduleKind::GPipe) CHECK(peak == m);
          if (kind == PipelineScheduleKind::OneFOneB) CHECK(peak == std::min(p - r, m));
        }
      }
    }
  }
  // The order of the bubbles: interleaving and splitting the backward both shrink 1f1b's.
  const double one_f_one_b = PipelineSchedule(PipelineScheduleKind::OneFOneB, 4, 8).simulate(1, 1, 1).bubble;
  CHECK(PipelineSchedule(PipelineScheduleKind::Interleaved1F1B, 4, 8, 2).simulate(1, 1, 1).bubble < one_f_one_b);
  CHECK(PipelineSchedule(PipelineScheduleKind::ZeroBubble, 4, 8).simulate(1, 1, 1).bubble < one_f_one_b / 2);
}

TEST_CASE("PipelineSchedule: refuses what it cannot run, naming the numbers") {
  CHECK_THROWS_WITH_AS(PipelineSchedule(PipelineScheduleKind::Interleaved1F1B, 4, 6, 2),
                       "[PipelineSchedule] interleaved_1f1b needs microbatches (6) to be a multiple of "
                       "pipeline_parallel_size (4)",
                       std::invalid_argument);
  CHECK_THROWS_AS(PipelineSchedule(PipelineScheduleKind::OneFOneB, 2, 0), std::invalid_argument);
}

}  // namespace pipeline_schedule_test
