#include "harness/sweep/schedule.h"

#include <map>
#include <string>

#include "base/error.h"

namespace specsweep {

std::vector<Group> MakeGroups(const std::vector<Point>& points) {
  std::vector<Group> groups;
  std::map<std::string, size_t> index;  // baseline key -> group
  for (auto& p : points) {
    const std::string base = p.speculative() ? p.Baseline().Key() : p.Key();
    auto [it, added] = index.emplace(base, groups.size());
    if (added) groups.emplace_back();
    Group& g = groups[it->second];
    if (g.points.empty() && p.speculative())
      Fail("experiment: point {} comes before its baseline {}", p.Name(), p.Baseline().Name());
    g.points.push_back(&p);
  }
  return groups;
}

std::vector<int> RoundOrder(int n_points, int round) {
  std::vector<int> order(n_points);
  for (int s = 0; s < n_points; ++s) order[s] = (s + round) % n_points;
  return order;
}

}  // namespace specsweep
