// Buffer lifetimes over program steps (step_lifetimes), hand-computed, and the arena that the
// fused CPU backend places with them for the GPT-2 stack against the live-bytes lower bound.
#include "graphfuse/models.h"
#include "runtime/step_lifetimes.h"
#include "test_util.h"

namespace gf {
namespace {

// x -> a = Relu(x) -> b = Reshape(a) -> c = Neg(b) -> y = Add(c, w); w a constant.
struct Chain {
  Graph g;
  ValueId x, a, b, c, y, w;
};

Chain chain() {
  GraphBuilder bld;
  Chain c;
  c.x = bld.input("x", DType::kF32, Shape{2, 3});
  c.w = bld.constant("w", Tensor(DType::kF32, {6}));
  c.a = bld.unary(Op::kRelu, c.x);
  c.b = bld.reshape(c.a, {6});
  c.c = bld.unary(Op::kNeg, c.b);
  c.y = bld.add(c.c, c.w);
  bld.output(c.y);
  c.g = bld.build();
  return c;
}

TEST(StepLifetimes, IntermediatesLiveFromTheirWriterToTheirLastReader) {
  Chain c = chain();
  // One step per node; the reshape reads a and writes b.
  std::vector<StepBuffers> steps = {{{c.x}, {c.a}}, {{c.a}, {c.b}}, {{c.b}, {c.c}}, {{c.c, c.w}, {c.y}}};
  StepLifetimes lt = step_lifetimes(c.g, steps);
  // The input, the output and the constant stay outside the arena.
  EXPECT_EQ(lt.slot_of_value[static_cast<size_t>(c.x)], -1);
  EXPECT_EQ(lt.slot_of_value[static_cast<size_t>(c.y)], -1);
  EXPECT_EQ(lt.slot_of_value[static_cast<size_t>(c.w)], -1);
  ASSERT_EQ(lt.buffers.size(), 3u);
  const BufferLifetime& a = lt.buffers[static_cast<size_t>(lt.slot_of_value[static_cast<size_t>(c.a)])];
  EXPECT_EQ(a.bytes, 24u);
  EXPECT_EQ(a.first_use, 0);
  EXPECT_EQ(a.last_use, 1);
  const BufferLifetime& cc = lt.buffers[static_cast<size_t>(lt.slot_of_value[static_cast<size_t>(c.c)])];
  EXPECT_EQ(cc.first_use, 2);
  EXPECT_EQ(cc.last_use, 3);
}

TEST(StepLifetimes, DeviceLayoutPinsInputsAndOutputsAndSharesAliasedStorage) {
  Chain c = chain();
  // As the CUDA backend runs it: the reshape is no step, b shares a's storage.
  std::vector<StepBuffers> steps = {{{c.x}, {c.a}}, {{c.b}, {c.c}}, {{c.c, c.w}, {c.y}}};
  LifetimeOptions o{true, true, false, {}};
  o.storage_of.resize(c.g.num_values());
  for (size_t v = 0; v < o.storage_of.size(); ++v) o.storage_of[v] = static_cast<ValueId>(v);
  o.storage_of[static_cast<size_t>(c.b)] = c.a;
  StepLifetimes lt = step_lifetimes(c.g, steps, o);
  auto life = [&](ValueId v) { return lt.buffers.at(static_cast<size_t>(lt.slot_of_value[static_cast<size_t>(v)])); };
  EXPECT_EQ(lt.slot_of_value[static_cast<size_t>(c.b)], lt.slot_of_value[static_cast<size_t>(c.a)]);
  EXPECT_EQ(lt.slot_of_value[static_cast<size_t>(c.w)], -1);  // weights live elsewhere
  EXPECT_EQ(life(c.x).first_use, 0);
  EXPECT_EQ(life(c.x).last_use, 0);
  EXPECT_EQ(life(c.a).last_use, 1);  // read through its alias b
  EXPECT_EQ(life(c.y).first_use, 2);
  EXPECT_EQ(life(c.y).last_use, 2);
  EXPECT_EQ(lt.buffers.size(), 4u);  // x, a (= b), c, y
}

TEST(StepLifetimes, InputsLiveToTheEndWhenAskedSoTheirSlotsAreNeverShared) {
  Chain c = chain();
  std::vector<StepBuffers> steps = {{{c.x}, {c.a}}, {{c.a}, {c.b}}, {{c.b}, {c.c}}, {{c.c, c.w}, {c.y}}};
  LifetimeOptions o{true, true, true, {}};
  StepLifetimes lt = step_lifetimes(c.g, steps, o);
  const BufferLifetime& x = lt.buffers.at(static_cast<size_t>(lt.slot_of_value[static_cast<size_t>(c.x)]));
  EXPECT_EQ(x.first_use, 0);
  EXPECT_EQ(x.last_use, 3);  // read only by step 0, kept to the last
}

TEST(StepLifetimes, Gpt2StackArenaStaysWithinTenPercentOfTheLowerBound) {
  models::Gpt2Config config;
  config.layers = 4;
  Session s(models::gpt2_stack(config));
  Tensor x(DType::kF32, {2, 64, config.d_model});
  s.run({x});
  const SessionStats st = s.stats();
  ASSERT_GT(st.arena_lower_bound, 0u);
  EXPECT_GE(st.arena_bytes, st.arena_lower_bound);
  EXPECT_LE(static_cast<double>(st.arena_bytes), 1.1 * static_cast<double>(st.arena_lower_bound))
      << st.arena_bytes << " bytes against a bound of " << st.arena_lower_bound;
}

}  // namespace
}  // namespace gf
