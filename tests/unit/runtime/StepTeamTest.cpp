//===- StepTeamTest.cpp - threads that run one decoder step together ------===//
//
// The meeting protocol alone (no kernels): members that offer the same
// layer see each other's offers and results; different layers, or a member
// that has finished while another waits, make the meeting fail for
// everyone instead of hanging.
//
//===----------------------------------------------------------------------===//
#include "runtime/kernels/StepTeam.h"

#include "gtest/gtest.h"

#include <atomic>
#include <vector>

using namespace tfmc::runtime;

namespace {

TeamOffer offer(const void *layer, int64_t rows, const void *input) {
  TeamOffer o;
  o.layer = layer;
  o.rows = rows;
  o.input = input;
  return o;
}

TEST(StepTeam, RunsEveryMemberOnItsOwnThread) {
  for (int members : {1, 2, 3}) {
    StepTeam team(members);
    std::vector<int> ran(members, 0);
    std::vector<std::thread::id> ids(members);
    auto body = [&](int member) {
      int me = -1;
      EXPECT_EQ(StepTeam::current(me), &team);
      EXPECT_EQ(me, member);
      ++ran[member];
      ids[member] = std::this_thread::get_id();
    };
    for (int round = 0; round < 50; ++round)
      team.run(body);
    for (int m = 0; m < members; ++m) {
      EXPECT_EQ(ran[m], 50);
      for (int o = 0; o < m; ++o)
        EXPECT_NE(ids[m], ids[o]);
    }
    EXPECT_EQ(ids[0], std::this_thread::get_id());
    int me = -1;
    EXPECT_EQ(StepTeam::current(me), nullptr);
  }
}

TEST(StepTeam, MembersAtTheSameLayerShareOffersAndResults) {
  StepTeam team(3);
  int layers[2];
  std::vector<std::vector<int64_t>> seen(3);
  std::atomic<int> failures{0};
  // A member's input must stay until its publish() returns, its result
  // until its next meet() returns.
  int64_t inputs[3], results[3];
  auto body = [&](int member) {
    // Two layers a step, many steps: offers and results of consecutive
    // meetings must not mix.
    for (int step = 0; step < 200; ++step) {
      for (int layer = 0; layer < 2; ++layer) {
        int64_t rows = member + 1;
        inputs[member] = 1000 * step + 10 * layer + member;
        const TeamOffer *all = nullptr;
        if (!team.meet(offer(&layers[layer], rows, &inputs[member]), all)) {
          ++failures;
          continue;
        }
        int64_t sum = 0;
        for (int m = 0; m < 3; ++m) {
          EXPECT_EQ(all[m].rows, m + 1);
          sum += *static_cast<const int64_t *>(all[m].input);
        }
        EXPECT_EQ(sum, 3 * (1000 * step + 10 * layer) + 3);
        results[member] = sum + member;
        if (!team.publish(&results[member])) {
          ++failures;
          continue;
        }
        for (int m = 0; m < 3; ++m)
          EXPECT_EQ(*static_cast<const int64_t *>(all[m].result), sum + m);
        seen[member].push_back(sum);
      }
    }
  };
  team.run(body);
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(seen[0], seen[1]);
  EXPECT_EQ(seen[0], seen[2]);
  EXPECT_EQ(seen[0].size(), 400u);
}

TEST(StepTeam, DifferentLayersMeetNobody) {
  StepTeam team(2);
  int a, b;
  std::vector<int> outcomes(2, -1);
  auto body = [&](int member) {
    const TeamOffer *all = nullptr;
    outcomes[member] = team.meet(offer(member == 0 ? &a : &b, 1, nullptr), all);
  };
  team.run(body);
  EXPECT_EQ(outcomes, std::vector<int>({0, 0}));
  // The next run meets again.
  auto same = [&](int member) {
    const TeamOffer *all = nullptr;
    outcomes[member] = team.meet(offer(&a, 1, nullptr), all);
    if (outcomes[member])
      outcomes[member] = team.publish(nullptr);
  };
  team.run(same);
  EXPECT_EQ(outcomes, std::vector<int>({1, 1}));
}

TEST(StepTeam, AMemberThatFinishedIsNotWaitedFor) {
  // Member 1 offers at three layers, member 0 at one: member 1's second
  // meeting fails once member 0 has finished, and so do the rest.
  StepTeam team(2);
  int layer;
  std::vector<std::vector<int>> outcomes(2);
  auto body = [&](int member) {
    for (int i = 0; i < (member == 0 ? 1 : 3); ++i) {
      const TeamOffer *all = nullptr;
      bool met = team.meet(offer(&layer, 1, nullptr), all);
      if (met)
        met = team.publish(nullptr);
      outcomes[member].push_back(met);
    }
  };
  for (int round = 0; round < 20; ++round) {
    outcomes.assign(2, {});
    team.run(body);
    EXPECT_EQ(outcomes[0], std::vector<int>({1}));
    EXPECT_EQ(outcomes[1], std::vector<int>({1, 0, 0}));
  }
}

TEST(StepTeam, CountsTheCoresItMayUse) {
  int cores = StepTeam::coresHere();
  EXPECT_GE(cores, 1);
  EXPECT_LE(cores, CPU_SETSIZE);
  // A team keeps its caller's cores when it goes (its members are pinned
  // while it lives).
  cpu_set_t before, after;
  ASSERT_EQ(pthread_getaffinity_np(pthread_self(), sizeof(before), &before), 0);
  {
    StepTeam team(2);
    auto body = [](int) {};
    team.run(body);
  }
  ASSERT_EQ(pthread_getaffinity_np(pthread_self(), sizeof(after), &after), 0);
  EXPECT_TRUE(CPU_EQUAL(&before, &after));
}

TEST(StepTeam, TheSameWeightWithAnotherBiasOrUseIsAnotherLayer) {
  StepTeam team(2);
  int weight, biases[2];
  std::vector<int> outcomes(2, -1);
  for (int variant = 0; variant < 2; ++variant) {
    auto body = [&](int member) {
      TeamOffer o = offer(&weight, 1, nullptr);
      if (variant == 0)
        o.bias = &biases[member];
      else
        o.detail = member;
      const TeamOffer *all = nullptr;
      outcomes[member] = team.meet(o, all);
    };
    team.run(body);
    EXPECT_EQ(outcomes, std::vector<int>({0, 0})) << "variant " << variant;
  }
}

TEST(StepTeam, OneMemberNeverMeets) {
  StepTeam team(1);
  int layer;
  bool met = true;
  auto body = [&](int) {
    const TeamOffer *all = nullptr;
    met = team.meet(offer(&layer, 1, nullptr), all);
  };
  team.run(body);
  EXPECT_FALSE(met);
}

} // namespace
