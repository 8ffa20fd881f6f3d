#include "runtime/cpu/search.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/warning.h"
#include "runtime/cpu/jit.h"

namespace luminal::runtime::cpu {

namespace {

// An alternative replaces the current option only when its median is this much faster, and by
// at least kMinSavingUs: below that, run-to-run noise on a shared machine would decide.
constexpr double kMargin = 0.9;
constexpr double kMinSavingUs = 2.0;
// Timed calls per configuration below which a median means little.
constexpr int kMinRuns = 3;

struct Medians {
  std::vector<double> step_us;
  double total_us = 0;
};

// One untimed call first, so that the pool's workers and the caches settle into this
// configuration, then the medians of `runs` timed calls.
Medians time_configuration(const TimeCall& time_call, const std::vector<StepChoice>& choices, int runs) {
  time_call(choices);
  std::vector<std::vector<double>> steps(choices.size());
  std::vector<double> totals;
  for (int r = 0; r < runs; ++r) {
    const TimedCall call = time_call(choices);
    for (size_t s = 0; s < choices.size(); ++s) steps[s].push_back(call.step_us[s]);
    totals.push_back(call.total_us);
  }
  Medians m;
  for (const std::vector<double>& times : steps) m.step_us.push_back(median(times));
  m.total_us = median(totals);
  return m;
}

bool same(const std::vector<StepChoice>& a, const std::vector<StepChoice>& b) {
  for (size_t s = 0; s < a.size(); ++s)
    if (a[s].parallel != b[s].parallel || a[s].matmul_through_aten != b[s].matmul_through_aten ||
        a[s].variant != b[s].variant)
      return false;
  return true;
}

// The heuristic with every proposal's departures from it applied (they touch different fields).
std::vector<StepChoice> union_of(const std::vector<StepChoice>& heuristic,
                                 const std::vector<std::pair<std::string, std::vector<StepChoice>>>& proposals) {
  std::vector<StepChoice> together = heuristic;
  for (const auto& proposal : proposals)
    for (size_t s = 0; s < heuristic.size(); ++s) {
      const StepChoice& c = proposal.second[s];
      if (c.parallel != heuristic[s].parallel) together[s].parallel = c.parallel;
      if (c.matmul_through_aten != heuristic[s].matmul_through_aten) together[s].matmul_through_aten = c.matmul_through_aten;
      if (c.variant != heuristic[s].variant) together[s].variant = c.variant;
    }
  return together;
}

}  // namespace

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

bool clearly_faster(double alternative_us, double current_us) {
  return alternative_us < kMargin * current_us && current_us - alternative_us > kMinSavingUs;
}

void append_search_log(const std::string& debug_dir, const std::string& text) {
  std::filesystem::create_directories(debug_dir);
  std::ofstream(std::filesystem::path(debug_dir) / "search_log.txt", std::ios::app) << text;
}

std::vector<StepChoice> search_schedule(const std::vector<StepChoice>& heuristic, const SearchSpace& space, int calls,
                                        const TimeCall& time_call, std::string& log) {
  std::ostringstream out;
  const bool any_split = std::find(space.splittable.begin(), space.splittable.end(), true) != space.splittable.end();
  const bool any_aten = std::find(space.aten_matmul.begin(), space.aten_matmul.end(), true) != space.aten_matmul.end();
  const int most_variants = space.variants.empty() ? 0 : *std::max_element(space.variants.begin(), space.variants.end());
  if (!any_split && !any_aten && most_variants == 0) {
    log += "search: no step has an alternative; heuristics\n";
    return heuristic;
  }
  // Timed: the heuristic; all candidates serial and all on the pool; all matmuls through ATen;
  // each variant index; then the picks of every kind together and, should they make whole calls
  // slower, each kind's picks alone and those faster alone together (kinds interact: MKL's
  // threads, say, may still spin when the pool's next kernel starts). Each configuration is one
  // warm call plus `runs` timed calls.
  const int kinds = (any_split ? 1 : 0) + (any_aten ? 1 : 0) + (most_variants > 0 ? 1 : 0);
  const int configurations =
      1 + (any_split ? 2 : 0) + (any_aten ? 1 : 0) + most_variants + 1 + (kinds > 1 ? kinds : 0) + (kinds > 2 ? 1 : 0);
  const int runs = calls / configurations - 1;
  if (runs < kMinRuns) {
    out << "search: " << calls << " calls are too few for " << configurations << " configurations of 1 warm and "
        << kMinRuns << " timed calls; heuristics\n";
    log += out.str();
    return heuristic;
  }
  const Medians base = time_configuration(time_call, heuristic, runs);
  out << "search: heuristic " << base.total_us << " us per call (median of " << runs << ")\n";
  // Each kind's picks, applied to the heuristic alone.
  std::vector<std::pair<std::string, std::vector<StepChoice>>> picks;
  if (any_split) {
    std::vector<StepChoice> serial = heuristic, parallel = heuristic, split = heuristic;
    for (size_t s = 0; s < heuristic.size(); ++s) {
      if (!space.splittable[s]) continue;
      serial[s].parallel = false;
      parallel[s].parallel = true;
    }
    const Medians all_serial = time_configuration(time_call, serial, runs);
    const Medians all_parallel = time_configuration(time_call, parallel, runs);
    for (size_t s = 0; s < heuristic.size(); ++s) {
      if (!space.splittable[s]) continue;
      const bool now = heuristic[s].parallel;
      const double current = now ? all_parallel.step_us[s] : all_serial.step_us[s];
      const double other = now ? all_serial.step_us[s] : all_parallel.step_us[s];
      if (!clearly_faster(other, current)) continue;
      split[s].parallel = !now;
      out << "  step " << s << ": " << (now ? "serial" : "on the pool") << " " << other << " us, was " << current
          << " us\n";
    }
    picks.emplace_back("thread splits", split);
  }
  if (any_aten) {
    std::vector<StepChoice> aten = heuristic, through_aten = heuristic;
    for (size_t s = 0; s < heuristic.size(); ++s)
      if (space.aten_matmul[s]) aten[s].matmul_through_aten = true;
    const Medians all_aten = time_configuration(time_call, aten, runs);
    for (size_t s = 0; s < heuristic.size(); ++s) {
      if (!space.aten_matmul[s] || !clearly_faster(all_aten.step_us[s], base.step_us[s])) continue;
      through_aten[s].matmul_through_aten = true;
      out << "  step " << s << ": matmul through ATen " << all_aten.step_us[s] << " us, OpenBLAS " << base.step_us[s]
          << " us\n";
    }
    picks.emplace_back("matmul libraries", through_aten);
  }
  if (most_variants > 0) {
    // A step's variants against its default tile and each other.
    out << "search: tile variants of "
        << std::count_if(space.variants.begin(), space.variants.end(), [](int n) { return n > 0; }) << " kernels\n";
    std::vector<StepChoice> tiles = heuristic;
    std::vector<double> fastest = base.step_us;
    for (int k = 0; k < most_variants; ++k) {
      std::vector<StepChoice> tiled = heuristic;
      for (size_t s = 0; s < heuristic.size(); ++s)
        if (space.variants[s] > k) tiled[s].variant = k;
      const Medians timed = time_configuration(time_call, tiled, runs);
      for (size_t s = 0; s < heuristic.size(); ++s) {
        if (space.variants[s] <= k || !clearly_faster(timed.step_us[s], fastest[s])) continue;
        out << "  step " << s << ": variant " << k << " " << timed.step_us[s] << " us, was " << fastest[s] << " us\n";
        fastest[s] = timed.step_us[s];
        tiles[s].variant = k;
      }
    }
    picks.emplace_back("tiles", tiles);
  }
  std::vector<std::pair<std::string, std::vector<StepChoice>>> proposals;
  for (const auto& pick : picks)
    if (!same(pick.second, heuristic)) proposals.push_back(pick);
  if (proposals.empty()) {
    out << "search: no step clearly faster another way; heuristics\n";
    log += out.str();
    return heuristic;
  }
  // Verified on whole calls: every kind's picks together; should that be slower than the
  // heuristic, each kind's alone, then those that were faster alone together.
  std::vector<StepChoice> best = heuristic;
  double best_us = base.total_us;
  std::string best_name = "the heuristic";
  auto verify = [&](const std::string& name, const std::vector<StepChoice>& choices) {
    const Medians verified = time_configuration(time_call, choices, runs);
    out << "search: " << name << " " << verified.total_us << " us per call, the heuristic " << base.total_us << "\n";
    const bool faster = verified.total_us <= base.total_us;
    if (verified.total_us <= best_us) {
      best = choices;
      best_us = verified.total_us;
      best_name = name;
    }
    return faster;
  };
  const bool all_faster =
      verify(proposals.size() > 1 ? "all choices" : proposals[0].first, union_of(heuristic, proposals));
  if (!all_faster && proposals.size() > 1) {
    std::vector<std::pair<std::string, std::vector<StepChoice>>> faster_alone;
    for (const auto& proposal : proposals)
      if (verify(proposal.first + " alone", proposal.second)) faster_alone.push_back(proposal);
    if (faster_alone.size() > 1 && faster_alone.size() < proposals.size())
      verify("the kinds faster alone", union_of(heuristic, faster_alone));
  }
  out << "search: keeps " << best_name << "\n";
  log += out.str();
  return best;
}

bool load_choices(const std::string& path, const SearchSpace& space, std::vector<StepChoice>& choices) {
  std::ifstream in(path);
  if (!in) return false;
  std::vector<StepChoice> loaded;
  for (std::string line; std::getline(in, line);) {
    // "<parallel 0|1> <aten 0|1> <variant -1..>"
    std::istringstream fields(line);
    int parallel = -1, aten = -1, variant = -2;
    std::string rest;
    if (!(fields >> parallel >> aten >> variant) || fields >> rest) return false;
    const size_t s = loaded.size();
    if (s >= space.variants.size() || parallel < 0 || parallel > 1 || aten < 0 || aten > 1 || variant < -1 ||
        variant >= space.variants[s])
      return false;
    loaded.push_back(StepChoice{parallel == 1, aten == 1, variant});
  }
  if (loaded.size() != space.variants.size()) return false;
  choices = std::move(loaded);
  return true;
}

void store_choices(const std::string& path, const std::vector<StepChoice>& choices) {
  std::ostringstream text;
  for (const StepChoice& c : choices)
    text << (c.parallel ? 1 : 0) << ' ' << (c.matmul_through_aten ? 1 : 0) << ' ' << c.variant << "\n";
  write_entry(path, text.str());
}

std::string search_entry_path(const std::string& cache_dir, const std::string& identity, const std::string& extension) {
  const std::string dir = cache_dir.empty() ? default_cache_dir() : cache_dir;
  return (std::filesystem::path(dir) / "search" / (content_hash(identity) + extension)).string();
}

void write_entry(const std::string& path, const std::string& text) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  const std::string tmp = path + "." + std::to_string(getpid()) + ".tmp";
  {
    std::ofstream out(tmp);
    out << text;
    if (!out) {
      fs::remove(tmp, ec);
      return;
    }
  }
  // On disk before the rename, so that a crash or power loss leaves the old entry or the new.
  if (const int fd = ::open(tmp.c_str(), O_RDONLY | O_CLOEXEC); fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
  fs::rename(tmp, path, ec);
  if (ec) fs::remove(tmp, ec);
}

void forget_unreadable_entry(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return;
  warn("the tuning record " + path + " is damaged; searching again");
  std::filesystem::remove(path, ec);
}

}  // namespace luminal::runtime::cpu
