# paper_figures/ (issue 8): the figure script is deterministic (tables identical except timing
# columns, figures identical), its verdict rules hold on a fixture, missing studies read "not run",
# and a tiny synthetic sweep run twice yields the same tables. A few seconds.
add_test(NAME figures_determinism
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/figures_determinism.sh ${CMAKE_SOURCE_DIR} ${CMAKE_BINARY_DIR}/bin)
set_tests_properties(figures_determinism PROPERTIES TIMEOUT 900)

# Each verdict rule of C1-C6 driven to each of its verdicts by an edited copy of the fixture
# (issue 20). A second or so: the figures are not drawn.
add_test(NAME verdict_rules
         COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/verdict_rules.py ${CMAKE_SOURCE_DIR})
set_tests_properties(verdict_rules PROPERTIES TIMEOUT 120)
