#include "sampling/processor_chain.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace glass {
namespace {

std::vector<std::string> step_names(const ProcessorChain& chain) {
  std::vector<std::string> names;
  for (const auto& step : chain.steps()) names.emplace_back(processor_name(step));
  return names;
}

using Names = std::vector<std::string>;

SamplingParams everything_on() {
  SamplingParams p;
  p.do_sample = true;
  p.temperature = 0.7;
  p.top_k = 20;
  p.top_p = 0.8;
  p.min_p = 0.05;
  p.repetition_penalty = 1.05;
  p.presence_penalty = 0.5;
  p.frequency_penalty = 0.1;
  return p;
}

TEST(ProcessorChain, TransformersOrder) {
  const ProcessorChain chain = ProcessorChain::from_params(everything_on());
  EXPECT_EQ(step_names(chain), (Names{"repetition_penalty", "presence_penalty", "frequency_penalty", "temperature",
                                      "top_k", "top_p", "min_p"}));
  EXPECT_EQ(chain.describe(),
            "repetition_penalty=1.05 -> presence_penalty=0.5 -> frequency_penalty=0.1 -> temperature=0.7 -> top_k=20 "
            "-> top_p=0.8 -> min_p=0.05");
}

TEST(ProcessorChain, LlamaCppOrderPutsTemperatureLast) {
  SamplingParams p = everything_on();
  p.chain_order = ChainOrder::llama_cpp;
  EXPECT_EQ(step_names(ProcessorChain::from_params(p)),
            (Names{"repetition_penalty", "presence_penalty", "frequency_penalty", "top_k", "top_p", "min_p",
                   "temperature"}));
}

TEST(ProcessorChain, OffStepsAreLeftOutAndGreedyKeepsOnlyPenalties) {
  SamplingParams p;  // transformers' defaults: greedy
  EXPECT_TRUE(ProcessorChain::from_params(p).steps().empty());
  EXPECT_EQ(ProcessorChain::from_params(p).describe(), "(none)");
  p = everything_on();
  p.do_sample = false;
  EXPECT_EQ(step_names(ProcessorChain::from_params(p)),
            (Names{"repetition_penalty", "presence_penalty", "frequency_penalty"}));
  p = everything_on();
  p.temperature = 0;  // greedy too
  EXPECT_EQ(step_names(ProcessorChain::from_params(p)).size(), 3u);
  p = everything_on();
  p.temperature = 1.0;
  p.top_k = 0;
  p.top_p = 1.0;
  p.min_p = 0;
  p.repetition_penalty = 1.0;
  p.presence_penalty = 0;
  p.frequency_penalty = 0;
  EXPECT_TRUE(ProcessorChain::from_params(p).steps().empty());
}

TEST(ProcessorChain, LogitBiasComesFirstInEitherOrderAndInGreedyDecoding) {
  SamplingParams p = everything_on();
  p.logit_bias = {{1, 2.0f}};
  EXPECT_EQ(step_names(ProcessorChain::from_params(p)).front(), "logit_bias");
  p.chain_order = ChainOrder::llama_cpp;
  EXPECT_EQ(step_names(ProcessorChain::from_params(p)).front(), "logit_bias");
  SamplingParams greedy;
  greedy.logit_bias = {{1, 2.0f}};
  EXPECT_EQ(step_names(ProcessorChain::from_params(greedy)), Names{"logit_bias"});
  // Before the repetition penalty, as vLLM and llama.cpp apply it: the penalty divides the
  // biased logit (1 + 2) / 2, not 1 / 2 + 2.
  greedy.repetition_penalty = 2.0;
  std::vector<float> row = {0.0f, 1.0f, 0.0f};
  const std::vector<int32_t> prompt = {1};
  ProcessorChain::from_params(greedy).apply(row, TokenHistory(prompt));
  EXPECT_EQ(row[1], 1.5f);
  // Padding rows past the tokenizer are removed before it, and stay removed.
  greedy.logit_bias = {{2, 100.0f}};
  row = {0.0f, 1.0f, 0.0f};
  ProcessorChain::from_params(greedy).apply(row, TokenHistory(prompt), nullptr, 2);
  EXPECT_EQ(row[2], -std::numeric_limits<float>::infinity());
}

TEST(ProcessorChain, OrderChangesTheResult) {
  // Temperature before top-p sharpens the distribution first, so top-p keeps fewer.
  std::vector<float> base = {0.0f, 0.5f, 1.0f, 1.5f};
  SamplingParams p;
  p.do_sample = true;
  p.top_k = 0;
  p.temperature = 0.25;
  p.top_p = 0.9;
  auto kept = [&](ChainOrder order) {
    p.chain_order = order;
    std::vector<float> row = base;
    ProcessorChain::from_params(p).apply(row, TokenHistory());
    return std::count_if(row.begin(), row.end(), [](float x) { return std::isfinite(x); });
  };
  EXPECT_EQ(kept(ChainOrder::transformers), 2);
  EXPECT_EQ(kept(ChainOrder::llama_cpp), 4);
}

TEST(ProcessorChain, CustomStepsRunInGivenOrder) {
  std::vector<float> row = {1.0f, 2.0f, 3.0f};
  ProcessorChain chain({TopK(1), Temperature(0.5)});
  chain.apply(row, TokenHistory());
  EXPECT_EQ(row[2], 6.0f);
  EXPECT_FALSE(std::isfinite(row[0]));
}

TEST(ProcessorChain, TraceReportsSurvivorsAndTopCandidates) {
  std::vector<float> row = {0.0f, 3.0f, 1.0f, 3.0f, 2.0f, -1.0f};
  SamplingParams p;
  p.do_sample = true;
  p.top_k = 3;
  p.temperature = 0.5;
  ChainTrace trace;
  trace.top_n = 2;
  ProcessorChain::from_params(p).apply(row, TokenHistory(), &trace);
  EXPECT_EQ(trace.vocab, 6);
  ASSERT_EQ(trace.steps.size(), 2u);
  EXPECT_EQ(trace.steps[0].setting, "temperature=0.5");
  EXPECT_EQ(trace.steps[0].surviving, 6);
  EXPECT_EQ(trace.steps[1].setting, "top_k=3");
  EXPECT_EQ(trace.steps[1].surviving, 3);
  ASSERT_EQ(trace.top_before.size(), 2u);
  EXPECT_EQ(trace.top_before[0].id, 1);  // equal logits: lower id first
  EXPECT_EQ(trace.top_before[1].id, 3);
  EXPECT_FLOAT_EQ(trace.top_before[0].logit, 3.0f);
  ASSERT_EQ(trace.top_after.size(), 2u);
  EXPECT_FLOAT_EQ(trace.top_after[0].logit, 6.0f);
  // After: softmax over {6, 6, 4}.
  const double e = std::exp(-2.0);
  EXPECT_NEAR(trace.top_after[0].prob, 1 / (2 + e), 1e-6);
  EXPECT_GT(trace.top_after[0].prob, trace.top_before[0].prob);
}

}  // namespace
}  // namespace glass
