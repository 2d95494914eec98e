#include <fulgur/strategies/environments/hostlist.hpp>

#include <doctest/doctest.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace hostlist_test {

using fulgur::expand_hostlist;
using Names = std::vector<std::string>;

TEST_CASE("hostlist: a plain name or address is itself") {
  CHECK(expand_hostlist("node7") == Names{"node7"});
  CHECK(expand_hostlist("10.0.0.1") == Names{"10.0.0.1"});
  CHECK(expand_hostlist("gpu-a100-01") == Names{"gpu-a100-01"});
}

TEST_CASE("hostlist: a range keeps the zero padding and a group mixes ranges and single numbers") {
  CHECK(expand_hostlist("jwb[0001-0004,0007]") == Names{"jwb0001", "jwb0002", "jwb0003", "jwb0004", "jwb0007"});
  CHECK(expand_hostlist("n[08-11]") == Names{"n08", "n09", "n10", "n11"});
  // The low bound sets the width, so an unpadded range grows naturally.
  CHECK(expand_hostlist("n[8-10]") == Names{"n8", "n9", "n10"});
  CHECK(expand_hostlist("n[098-101]") == Names{"n098", "n099", "n100", "n101"});
  // A single number is taken as written.
  CHECK(expand_hostlist("n[007]") == Names{"n007"});
  CHECK(expand_hostlist("n[3]") == Names{"n3"});
  CHECK(expand_hostlist("n[5,1-2]") == Names{"n5", "n1", "n2"});
  CHECK(expand_hostlist("n[4-4]") == Names{"n4"});
  CHECK(expand_hostlist("[1-3]") == Names{"1", "2", "3"});
  CHECK(expand_hostlist("n[1-2].cluster") == Names{"n1.cluster", "n2.cluster"});
}

TEST_CASE("hostlist: top-level commas separate entries, commas inside brackets separate ranges") {
  CHECK(expand_hostlist("a1,b[1-2]") == Names{"a1", "b1", "b2"});
  CHECK(expand_hostlist("a,b[1-2],c[5,7-8]d") == Names{"a", "b1", "b2", "c5d", "c7d", "c8d"});
  CHECK(expand_hostlist("x[1-2],x[1]") == Names{"x1", "x2", "x1"});  // order kept, no dedupe
}

TEST_CASE("hostlist: several groups expand to the cartesian product, leftmost varies slowest") {
  CHECK(expand_hostlist("rack[1-2]-node[01-02]") ==
        Names{"rack1-node01", "rack1-node02", "rack2-node01", "rack2-node02"});
  CHECK(expand_hostlist("r[1,3]n[1-3]") == Names{"r1n1", "r1n2", "r1n3", "r3n1", "r3n2", "r3n3"});
  CHECK(expand_hostlist("a[1-2]b[1]c[7-8],z") == Names{"a1b1c7", "a1b1c8", "a2b1c7", "a2b1c8", "z"});
}

TEST_CASE("hostlist: a large but sane list expands fully") {
  const auto names = expand_hostlist("n[00000-99999]");
  REQUIRE(names.size() == 100000);
  CHECK(names.front() == "n00000");
  CHECK(names.back() == "n99999");
}

TEST_CASE("hostlist: bad syntax is rejected with a message quoting the text") {
  CHECK_THROWS_WITH_AS(expand_hostlist(""), "[expand_hostlist] hostlist '' is empty", std::invalid_argument);
  CHECK_THROWS_WITH_AS(expand_hostlist("jwb[0001-0004"), "[expand_hostlist] unbalanced '[' in hostlist 'jwb[0001-0004'",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(expand_hostlist("jwb0001]"), "[expand_hostlist] unbalanced ']' in hostlist 'jwb0001]'",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(expand_hostlist("a[1[2]]"), "[expand_hostlist] nested '[' in hostlist 'a[1[2]]'",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(expand_hostlist("n[4-1]"), "[expand_hostlist] reversed range '4-1' in hostlist 'n[4-1]'",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(expand_hostlist("jwb[0004-0001]"),
                       "[expand_hostlist] reversed range '0004-0001' in hostlist 'jwb[0004-0001]'",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(expand_hostlist("n[]"), "[expand_hostlist] empty range in '[]' in hostlist 'n[]'",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(expand_hostlist("n[1,,2]"), "[expand_hostlist] empty range in '[1,,2]' in hostlist 'n[1,,2]'",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(expand_hostlist("n[1-2,]"), "[expand_hostlist] empty range in '[1-2,]' in hostlist 'n[1-2,]'",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(expand_hostlist("a,,b"), "[expand_hostlist] empty host name in hostlist 'a,,b'",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(expand_hostlist("a,"), "[expand_hostlist] empty host name in hostlist 'a,'",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(expand_hostlist(","), "[expand_hostlist] empty host name in hostlist ','",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(expand_hostlist("n[a-b]"), "[expand_hostlist] range 'a-b' is not numeric in hostlist 'n[a-b]'",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(expand_hostlist("n[1-]"), "[expand_hostlist] range '1-' is not numeric in hostlist 'n[1-]'",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(expand_hostlist("n[1-2-3]"),
                       "[expand_hostlist] range '1-2-3' is not numeric in hostlist 'n[1-2-3]'", std::invalid_argument);
  CHECK_THROWS_WITH_AS(expand_hostlist("n[x]"), "[expand_hostlist] range 'x' is not numeric in hostlist 'n[x]'",
                       std::invalid_argument);
}

TEST_CASE("hostlist: absurd sizes are refused instead of exhausting memory") {
  CHECK_THROWS_WITH_AS(expand_hostlist("n[0-99999999]"),
                       "[expand_hostlist] range '0-99999999' expands to more than 1048576 names in hostlist "
                       "'n[0-99999999]'",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(expand_hostlist("a[0-1023]b[0-1024]"),
                       "[expand_hostlist] the list expands to more than 1048576 names in hostlist "
                       "'a[0-1023]b[0-1024]'",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(expand_hostlist("n[1-99999999999999999999]"),
                       "[expand_hostlist] range '1-99999999999999999999' is too large in hostlist "
                       "'n[1-99999999999999999999]'",
                       std::invalid_argument);
  // Exactly at the limit is still fine.
  CHECK(expand_hostlist("a[0-1023]b[0-1023]").size() == 1048576);
}

}  // namespace hostlist_test
