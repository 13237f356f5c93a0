// Test support for the optimizer's passes: a model loaded with no rewrites
// and with some, both run on the CPU engine on the same inputs.
#ifndef COALESCE_ENGINE_TESTING_OPTIMIZER_COMPARE_H_
#define COALESCE_ENGINE_TESTING_OPTIMIZER_COMPARE_H_

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "engine/model.h"
#include "engine/testing/onnx_model_builder.h"
#include "gtest/gtest.h"

namespace coalesce::testing {

// Loads the serialized model `bytes` with OptimizerOptions::None() and with
// `options`, expects the same output shapes and values (within 1e-5 + 1e-5
// of each) on `inputs`, and returns the model loaded with `options` (null
// when either failed to load or run).
inline std::shared_ptr<const Model> LoadOptimizedAndCompare(
    const std::string& bytes, const ModelOptions& options,
    const std::vector<HostTensor>& inputs) {
  auto plain = Model::LoadFromBytes(bytes, {OptimizerOptions::None()});
  auto optimized = Model::LoadFromBytes(bytes, options);
  EXPECT_TRUE(plain.ok()) << plain.status();
  EXPECT_TRUE(optimized.ok()) << optimized.status();
  if (!plain.ok() || !optimized.ok()) return nullptr;
  auto want = RunModelOnce(*plain, inputs);
  auto got = RunModelOnce(*optimized, inputs);
  EXPECT_TRUE(want.ok()) << want.status();
  EXPECT_TRUE(got.ok()) << got.status();
  if (!want.ok() || !got.ok()) return nullptr;
  EXPECT_EQ(want->size(), got->size());
  for (size_t o = 0; o < want->size() && o < got->size(); ++o) {
    EXPECT_EQ((*want)[o].shape, (*got)[o].shape) << "output " << o;
    const std::vector<float>& w = (*want)[o].data;
    const std::vector<float>& g = (*got)[o].data;
    EXPECT_EQ(w.size(), g.size()) << "output " << o;
    for (size_t i = 0; i < w.size() && i < g.size(); ++i)
      EXPECT_NEAR(g[i], w[i], 1e-5 + 1e-5 * std::abs(w[i]))
          << "output " << o << " at " << i;
  }
  return *optimized;
}

}  // namespace coalesce::testing

#endif  // COALESCE_ENGINE_TESTING_OPTIMIZER_COMPARE_H_
