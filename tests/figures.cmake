# paper_figures/ (issue 8): the figure script is deterministic (tables identical except timing
# columns, figures identical), its verdict rules hold on a fixture, missing studies read "not run",
# and a tiny synthetic sweep run twice yields the same tables. A few seconds.
add_test(NAME figures_determinism
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/figures_determinism.sh ${CMAKE_SOURCE_DIR} ${CMAKE_BINARY_DIR}/bin)
set_tests_properties(figures_determinism PROPERTIES TIMEOUT 300)
