# gen_problems.cmake: api/problems.json (hpwarmd's problem catalog) -> the
# public enum hpw_slug (hpwarm_problems.h) and the library's private table
# (problems_table.h).  Run at build time by client/CMakeLists.txt:
#   cmake -DIN=problems.json -DPUBLIC=hpwarm_problems.h -DPRIVATE=problems_table.h -P gen_problems.cmake
# The enum's values are the catalog's positions (1-based; 0 is
# HPW_SLUG_UNKNOWN), so the catalog only ever grows at its end: a reordered
# or removed slug changes an enum value, which the ABI check (client.abi)
# reports.  A malformed entry fails the build rather than giving a table
# that disagrees with the daemon.
cmake_minimum_required(VERSION 3.25)
file(READ "${IN}" json)
string(JSON n LENGTH "${json}")
if(n LESS 1)
  message(FATAL_ERROR "${IN}: empty catalog")
endif()
set(enum "")
set(rows "")
math(EXPR last "${n} - 1")
set(seen "")
foreach(i RANGE ${last})
  string(JSON slug GET "${json}" ${i} slug)
  string(JSON status GET "${json}" ${i} status)
  string(JSON title GET "${json}" ${i} title)
  string(JSON retry GET "${json}" ${i} retryable)
  string(JSON rtype TYPE "${json}" ${i} retryable)
  if(NOT slug MATCHES "^[a-z0-9]+(-[a-z0-9]+)*$")
    message(FATAL_ERROR "${IN}[${i}]: bad slug '${slug}'")
  endif()
  if(NOT status MATCHES "^[1-5][0-9][0-9]$")
    message(FATAL_ERROR "${IN}[${i}] ${slug}: bad status '${status}'")
  endif()
  if(NOT rtype STREQUAL "BOOLEAN")
    message(FATAL_ERROR "${IN}[${i}] ${slug}: retryable must be true or false")
  endif()
  if(title MATCHES "[\"\\\\]")
    message(FATAL_ERROR "${IN}[${i}] ${slug}: title with a quote or backslash")
  endif()
  if(slug IN_LIST seen)
    message(FATAL_ERROR "${IN}: slug ${slug} twice")
  endif()
  list(APPEND seen "${slug}")
  string(TOUPPER "${slug}" id)
  string(REPLACE "-" "_" id "${id}")
  math(EXPR v "${i} + 1")
  if(retry)
    set(rb true)
  else()
    set(rb false)
  endif()
  string(APPEND enum "        HPW_SLUG_${id} = ${v}, /* ${status} ${title} */\n")
  string(APPEND rows "        [HPW_SLUG_${id}] = { \"${slug}\", ${status}, ${rb} },\n")
endforeach()

set(hdr "/* hpwarm_problems.h: generated from problems.json by gen_problems.cmake; do not edit.
 * hpwarmd's problem slugs as an enum (included by hpwarm.h).  Values are
 * positions in the catalog, which only grows at its end. */
#ifndef HPWARM_PROBLEMS_H
#define HPWARM_PROBLEMS_H
enum hpw_slug {
        HPW_SLUG_UNKNOWN = 0, /* no problem, or a slug this library does not know */
${enum}};
#define HPW_SLUG_COUNT ${n}
#endif
")
set(tbl "/* problems_table.h: generated from problems.json by gen_problems.cmake; do not edit. */
static const struct { const char *slug; int status; bool retryable; } hpw_slug_table[HPW_SLUG_COUNT + 1] = {
${rows}};
")
# Written only when different, so an unchanged catalog rebuilds nothing.
file(CONFIGURE OUTPUT "${PUBLIC}" CONTENT "${hdr}" @ONLY)
file(CONFIGURE OUTPUT "${PRIVATE}" CONTENT "${tbl}" @ONLY)
