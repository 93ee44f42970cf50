// The search the autotuner runs over its continuous knobs (autotune.h): a
// Gaussian process models the score as a function of the knobs from the
// samples seen so far, and the next point is where the expected
// improvement over the best modelled score is largest (Horovod's method,
// docs/runtime.md "Autotune"; written for Tandem, no linear-algebra
// library).
//
// The model works in the unit box: each knob is scaled by its bounds, so
// one length scale fits knobs of different units. Scores are standardised
// before the fit (once there are three), so the noise term, the share of a
// score's spread the model may leave unexplained, means the same whatever
// the score's unit. The length scale is the one of a small grid that
// makes the samples most likely. The next point is the best of a fixed
// set of random candidates, refined by a shrinking pattern search; the
// random generator has a fixed seed, so a run is reproducible.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

namespace tandem::runtime {

// A Gaussian-process regression with a squared-exponential kernel, on
// points of the unit box.
class GaussianProcess {
 public:
  // noise: added to the kernel's diagonal (the variance of a sample's noise,
  // relative to the standardised scores' unit variance).
  explicit GaussianProcess(double noise) : noise_(noise) {}

  // Fits the samples (x[i], y[i]); picks the length scale that maximises
  // the marginal likelihood. Throws InvalidArgument on mismatched sizes or
  // no sample.
  void fit(const std::vector<std::vector<double>>& x, const std::vector<double>& y);

  struct Prediction {
    double mean = 0;
    double stddev = 0;
  };
  Prediction predict(const std::vector<double>& x) const;
  double length_scale() const { return length_; }
  // The log marginal likelihood of the fitted samples at `length`.
  double log_likelihood(double length) const;

 private:
  double kernel(const std::vector<double>& a, const std::vector<double>& b, double length) const;
  // Cholesky factor of K + noise I at `length`; false when not positive.
  bool factor(double length, std::vector<double>* lower) const;

  double noise_;
  double length_ = 0.2;
  std::vector<std::vector<double>> x_;
  std::vector<double> y_;
  std::vector<double> lower_;  // Cholesky factor, row major n x n
  std::vector<double> alpha_;  // (K + noise I)^-1 y
};

// Proposes the next point to try in a box, from the scores seen so far.
class BayesianOptimizer {
 public:
  using Bounds = std::vector<std::pair<double, double>>;
  // xi: how much better than the best a point must promise to count as an
  // improvement; larger explores more.
  BayesianOptimizer(Bounds bounds, double noise, double xi = 0.01, uint64_t seed = 1);

  // A sample in the knobs' own units.
  void add(const std::vector<double>& x, double score);
  // The point that maximises the expected improvement (in the knobs' own
  // units, within the bounds). Throws InvalidArgument before any sample.
  std::vector<double> next();
  size_t samples() const { return y_.size(); }

  // Expected improvement of a modelled point over `best`.
  static double expected_improvement(const GaussianProcess::Prediction& p, double best, double xi);

 private:
  std::vector<double> to_unit(const std::vector<double>& x) const;
  std::vector<double> from_unit(const std::vector<double>& u) const;

  Bounds bounds_;
  double noise_;
  double xi_;
  std::mt19937_64 rng_;
  std::vector<std::vector<double>> x_;  // unit box
  std::vector<double> y_;
};

}  // namespace tandem::runtime
