#include "runtime/bayesian_optimizer.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "common/errors.h"

namespace tandem::runtime {

namespace {

constexpr double kPi = 3.14159265358979323846;

// Solves L z = b for a lower triangular L (row major n x n).
std::vector<double> forward(const std::vector<double>& lower, std::vector<double> b) {
  const size_t n = b.size();
  for (size_t i = 0; i < n; ++i) {
    for (size_t k = 0; k < i; ++k) b[i] -= lower[i * n + k] * b[k];
    b[i] /= lower[i * n + i];
  }
  return b;
}

// Solves L^T z = b.
std::vector<double> backward(const std::vector<double>& lower, std::vector<double> b) {
  const size_t n = b.size();
  for (size_t i = n; i-- > 0;) {
    for (size_t k = i + 1; k < n; ++k) b[i] -= lower[k * n + i] * b[k];
    b[i] /= lower[i * n + i];
  }
  return b;
}

}  // namespace

double GaussianProcess::kernel(const std::vector<double>& a, const std::vector<double>& b,
                               double length) const {
  double d2 = 0;
  for (size_t k = 0; k < a.size(); ++k) d2 += (a[k] - b[k]) * (a[k] - b[k]);
  return std::exp(-d2 / (2 * length * length));
}

bool GaussianProcess::factor(double length, std::vector<double>* lower) const {
  const size_t n = x_.size();
  lower->assign(n * n, 0.0);
  std::vector<double>& l = *lower;
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j <= i; ++j) {
      double s = kernel(x_[i], x_[j], length) + (i == j ? noise_ : 0.0);
      for (size_t k = 0; k < j; ++k) s -= l[i * n + k] * l[j * n + k];
      if (i == j) {
        if (s <= 0) return false;
        l[i * n + i] = std::sqrt(s);
      } else {
        l[i * n + j] = s / l[j * n + j];
      }
    }
  }
  return true;
}

double GaussianProcess::log_likelihood(double length) const {
  std::vector<double> l;
  if (!factor(length, &l)) return -std::numeric_limits<double>::infinity();
  const size_t n = y_.size();
  const std::vector<double> a = backward(l, forward(l, y_));
  double fit = 0, logdet = 0;
  for (size_t i = 0; i < n; ++i) {
    fit += y_[i] * a[i];
    logdet += std::log(l[i * n + i]);
  }
  return -0.5 * fit - logdet - 0.5 * static_cast<double>(n) * std::log(2 * kPi);
}

void GaussianProcess::fit(const std::vector<std::vector<double>>& x, const std::vector<double>& y) {
  if (x.empty() || x.size() != y.size())
    throw InvalidArgument("gaussian process: " + std::to_string(x.size()) + " points for " +
                          std::to_string(y.size()) + " scores; expected as many, at least one");
  x_ = x;
  y_ = y;
  // A grid from a fraction of the box to the whole box: coarse, but the
  // few samples of a tuning run cannot tell finer scales apart.
  double best = -std::numeric_limits<double>::infinity();
  for (double length : {0.05, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1.0}) {
    const double ll = log_likelihood(length);
    if (ll > best) {
      best = ll;
      length_ = length;
    }
  }
  if (!factor(length_, &lower_))
    throw Error("gaussian process: the kernel matrix is not positive definite (noise " +
                std::to_string(noise_) + "); set a noise above 0");
  alpha_ = backward(lower_, forward(lower_, y_));
}

GaussianProcess::Prediction GaussianProcess::predict(const std::vector<double>& x) const {
  const size_t n = x_.size();
  std::vector<double> k(n);
  for (size_t i = 0; i < n; ++i) k[i] = kernel(x, x_[i], length_);
  Prediction p;
  p.mean = std::inner_product(k.begin(), k.end(), alpha_.begin(), 0.0);
  const std::vector<double> v = forward(lower_, k);
  const double var = 1.0 - std::inner_product(v.begin(), v.end(), v.begin(), 0.0);
  p.stddev = std::sqrt(std::max(0.0, var));
  return p;
}

BayesianOptimizer::BayesianOptimizer(Bounds bounds, double noise, double xi, uint64_t seed)
    : bounds_(std::move(bounds)), noise_(noise), xi_(xi), rng_(seed) {
  for (const auto& [lo, hi] : bounds_)
    if (!(hi > lo))
      throw InvalidArgument("bayesian optimizer: bounds [" + std::to_string(lo) + ", " +
                            std::to_string(hi) + "]; expected low < high");
}

std::vector<double> BayesianOptimizer::to_unit(const std::vector<double>& x) const {
  std::vector<double> u(x.size());
  for (size_t k = 0; k < x.size(); ++k)
    u[k] = (x[k] - bounds_[k].first) / (bounds_[k].second - bounds_[k].first);
  return u;
}

std::vector<double> BayesianOptimizer::from_unit(const std::vector<double>& u) const {
  std::vector<double> x(u.size());
  for (size_t k = 0; k < u.size(); ++k)
    x[k] = bounds_[k].first + std::clamp(u[k], 0.0, 1.0) * (bounds_[k].second - bounds_[k].first);
  return x;
}

void BayesianOptimizer::add(const std::vector<double>& x, double score) {
  if (x.size() != bounds_.size())
    throw InvalidArgument("bayesian optimizer: a point of " + std::to_string(x.size()) +
                          " values for " + std::to_string(bounds_.size()) + " knobs");
  x_.push_back(to_unit(x));
  y_.push_back(score);
}

double BayesianOptimizer::expected_improvement(const GaussianProcess::Prediction& p, double best,
                                               double xi) {
  const double imp = p.mean - best - xi;
  if (p.stddev <= 0) return std::max(0.0, imp);
  const double z = imp / p.stddev;
  const double pdf = std::exp(-0.5 * z * z) / std::sqrt(2 * kPi);
  const double cdf = 0.5 * std::erfc(-z / std::sqrt(2.0));
  return imp * cdf + p.stddev * pdf;
}

std::vector<double> BayesianOptimizer::next() {
  if (y_.empty()) throw InvalidArgument("bayesian optimizer: no sample to start from");
  // Standardised scores (from three on: the spread of fewer says little).
  double mu = 0, sigma = 1;
  if (y_.size() >= 3) {
    mu = std::accumulate(y_.begin(), y_.end(), 0.0) / static_cast<double>(y_.size());
    double ss = 0;
    for (double v : y_) ss += (v - mu) * (v - mu);
    sigma = std::sqrt(ss / static_cast<double>(y_.size()));
    if (sigma <= 0) sigma = 1;
  }
  std::vector<double> ys(y_.size());
  for (size_t i = 0; i < y_.size(); ++i) ys[i] = (y_[i] - mu) / sigma;
  GaussianProcess gp(noise_);
  gp.fit(x_, ys);
  // The best the model believes it has seen: with noisy scores the best
  // observed one is often luck, the model's mean at the samples is not.
  double best = -std::numeric_limits<double>::infinity();
  for (const auto& x : x_) best = std::max(best, gp.predict(x).mean);
  auto ei = [&](const std::vector<double>& u) {
    return expected_improvement(gp.predict(u), best, xi_);
  };

  const size_t d = bounds_.size();
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::vector<double> arg(d, 0.5);
  double top = -1;
  for (int c = 0; c < 1024; ++c) {
    std::vector<double> u(d);
    for (double& v : u) v = unit(rng_);
    const double e = ei(u);
    if (e > top) {
      top = e;
      arg = u;
    }
  }
  // Pattern search around the best candidate: try a step each way on every
  // knob, halve the step when none helps.
  for (double step = 0.05; step > 1e-4;) {
    bool moved = false;
    for (size_t k = 0; k < d; ++k)
      for (double dir : {-1.0, 1.0}) {
        std::vector<double> u = arg;
        u[k] = std::clamp(u[k] + dir * step, 0.0, 1.0);
        const double e = ei(u);
        if (e > top) {
          top = e;
          arg = u;
          moved = true;
        }
      }
    if (!moved) step /= 2;
  }
  return from_unit(arg);
}

}  // namespace tandem::runtime
