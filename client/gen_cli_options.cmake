# gen_cli_options.cmake: cli_options.json (hpwarm's commands and long
# options) -> the headers the CLI is built with.  Run at build time by
# client/CMakeLists.txt:
#   cmake -DIN=cli_options.json -DOUT_DIR=DIR -P gen_cli_options.cmake
# writes, in DIR:
#   cli_commands.h        enum cli_cmd: CMD_NONE, then CMD_NAME for each
#                         command that runs, in the file's order
#   cli_commands_table.h  the command rows (struct cmddef, cli_options.h)
#   cli_commands_run.h    what each command runs, for main.c's dispatch
#   cli_option_ids.h      enum opt_id: O_NAME for each option (its "short"
#                         letter, else 256 up in the file's order)
#   cli_options_table.h   the option rows (struct optdef, cli_options.h)
# A command: "name", "run" (the C function taking the command's context) or
# "main" (one taking argc, argv: a command with its own parser) or neither
# (help), "help_fn" (its own help printer, with "main"), "args" ([min, max]
# positional arguments: numbers or C expressions), "synopsis", "summary",
# "sizes" (its help ends with the size grammar) and "more" (lines of its own
# help).  An option: "name" (the long option, also its id O_NAME), "short"
# (a one-letter alias), "arg" (the value's name in help; absent for a flag),
# "commands" ("global", or the commands that take it) and "help" (its
# lines).  "{CLI_DEFAULT_URL}" in a help line stands for cli.h's macro,
# "{VMMS}" for the VMM formats' names (cli_options.c fills it in).
# The commands and options are data: one row each, kept in the one file the
# help, the parser, the dispatch and the manual check read.  A malformed
# entry fails the build.
cmake_minimum_required(VERSION 3.25)
file(READ "${IN}" json)

# The index of the last item of the array at json's PATH (ARGN); an empty
# or missing array is an error naming WHAT.
function(last_index ret what)
  string(JSON len ERROR_VARIABLE bad LENGTH "${json}" ${ARGN})
  if(bad OR len LESS 1)
    message(FATAL_ERROR "${IN}: ${what}: none")
  endif()
  math(EXPR last "${len} - 1")
  set(${ret} ${last} PARENT_SCOPE)
endfunction()

# LINE as the inside of a C string literal.
function(c_escape ret line)
  string(REPLACE "\\" "\\\\" line "${line}")
  string(REPLACE "\"" "\\\"" line "${line}")
  set(${ret} "${line}" PARENT_SCOPE)
endfunction()

# The lines of the array at PATH (ARGN) as one C string, each line but the
# last ending in \n (TRAIL: the last too), indented by INDENT.
function(c_lines ret what indent trail)
  last_index(lasth "${what}" ${ARGN})
  set(out "")
  foreach(k RANGE ${lasth})
    string(JSON line GET "${json}" ${ARGN} ${k})
    c_escape(line "${line}")
    string(REPLACE "{CLI_DEFAULT_URL}" "\" CLI_DEFAULT_URL \"" line "${line}")
    if(k LESS lasth OR trail)
      string(APPEND out "\n${indent}\"${line}\\n\"")
    else()
      string(APPEND out "\n${indent}\"${line}\"")
    endif()
  endforeach()
  set(${ret} "${out}" PARENT_SCOPE)
endfunction()

# ---- commands ----
set(commands "")
set(cmd_enum "")
set(cmd_rows "")
set(cmd_runs "")
last_index(last "commands" commands)
foreach(i RANGE ${last})
  string(JSON name GET "${json}" commands ${i} name)
  # Words joined by "-" (libvirt-hook), CMD_LIBVIRT_HOOK, as the options are.
  if(NOT name MATCHES "^[a-z]+(-[a-z]+)*$" OR name IN_LIST commands)
    message(FATAL_ERROR "${IN}: command name '${name}' malformed or given twice")
  endif()
  list(APPEND commands ${name})
  string(TOUPPER "CMD_${name}" id)
  string(REPLACE "-" "_" id "${id}")
  string(JSON run ERROR_VARIABLE no_run GET "${json}" commands ${i} run)
  string(JSON main ERROR_VARIABLE no_main GET "${json}" commands ${i} main)
  string(JSON help_fn ERROR_VARIABLE no_help_fn GET "${json}" commands ${i} help_fn)
  if(NOT no_run AND NOT no_main)
    message(FATAL_ERROR "${IN}: command ${name}: run or main, not both")
  endif()
  if(NOT no_help_fn AND no_main)
    message(FATAL_ERROR "${IN}: command ${name}: help_fn goes with main")
  endif()
  if(no_run AND no_main)
    set(id CMD_NONE)
  else()
    string(APPEND cmd_enum " ${id},")
    if(NOT no_run)
      set(runs ".run = ${run}")
    elseif(no_help_fn)
      set(runs ".main = ${main}")
    else()
      set(runs ".main = ${main}, .help = ${help_fn}")
    endif()
    string(APPEND cmd_runs "        [${id}] = { ${runs} },\n")
  endif()
  string(JSON min GET "${json}" commands ${i} args 0)
  string(JSON max GET "${json}" commands ${i} args 1)
  string(JSON synopsis GET "${json}" commands ${i} synopsis)
  string(JSON summary GET "${json}" commands ${i} summary)
  c_escape(synopsis "${synopsis}")
  c_escape(summary "${summary}")
  string(JSON sizes ERROR_VARIABLE no_sizes GET "${json}" commands ${i} sizes)
  if(no_sizes OR NOT sizes)
    set(sizes false)
  else()
    set(sizes true)
  endif()
  string(JSON more_type ERROR_VARIABLE no_more TYPE "${json}" commands ${i} more)
  if(no_more)
    set(more " NULL")
  else()
    c_lines(more "command ${name} more" "          " TRUE commands ${i} more)
  endif()
  string(APPEND cmd_rows "        { \"${name}\", ${id}, ${min}, ${max}, \"${synopsis}\", \"${summary}\",${more}, ${sizes} },\n")
endforeach()

# ---- options ----
set(rows "")
set(opt_enum "")
set(next_id 256)
last_index(last "options" options)
foreach(i RANGE ${last})
  string(JSON name GET "${json}" options ${i} name)
  string(TOUPPER "O_${name}" id)
  string(REPLACE "-" "_" id "${id}")
  if(NOT name MATCHES "^[a-z][a-z0-9]*(-[a-z0-9]+)*$" OR DEFINED seen_${id})
    message(FATAL_ERROR "${IN}: option name '${name}' malformed or given twice")
  endif()
  set(seen_${id} 1)
  string(JSON short ERROR_VARIABLE no_short GET "${json}" options ${i} short)
  if(no_short)
    string(APPEND opt_enum "        ${id} = ${next_id},\n")
    math(EXPR next_id "${next_id} + 1")
  elseif(short MATCHES "^[a-zA-Z]$")
    string(APPEND opt_enum "        ${id} = '${short}',\n")
  else()
    message(FATAL_ERROR "${IN} --${name}: short is one letter")
  endif()
  string(JSON arg ERROR_VARIABLE no_arg GET "${json}" options ${i} arg)
  if(no_arg)
    set(has_arg no_argument)
    set(arg NULL)
  elseif(arg MATCHES "^[A-Z][A-Z:_]*$")
    set(has_arg required_argument)
    set(arg "\"${arg}\"")
  else()
    message(FATAL_ERROR "${IN} --${name}: bad arg '${arg}'")
  endif()
  string(JSON ctype TYPE "${json}" options ${i} commands)
  if(ctype STREQUAL "STRING")
    string(JSON c GET "${json}" options ${i} commands)
    if(NOT c STREQUAL "global")
      message(FATAL_ERROR "${IN} --${name}: commands is \"global\" or a list")
    endif()
    set(cmds GLOBAL)
  else()
    last_index(lastc "--${name} commands" options ${i} commands)
    set(cmds "")
    foreach(k RANGE ${lastc})
      string(JSON c GET "${json}" options ${i} commands ${k})
      if(NOT c IN_LIST commands)
        message(FATAL_ERROR "${IN} --${name}: unknown command '${c}'")
      endif()
      string(TOUPPER "${c}" c)
      if(cmds)
        string(APPEND cmds " | ")
      endif()
      string(APPEND cmds "C(CMD_${c})")
    endforeach()
  endif()
  c_lines(help "--${name} help" "          " FALSE options ${i} help)
  string(APPEND rows "        { \"${name}\", ${has_arg}, ${id}, ${cmds}, ${arg},${help} },\n")
endforeach()

# Each file is rewritten only when its text changes, so a change of the
# help does not rebuild what includes the enums.
function(write_gen file text)
  file(WRITE "${OUT_DIR}/${file}.tmp" "/* ${file}: generated from cli_options.json by gen_cli_options.cmake; do not edit. */\n${text}")
  file(COPY_FILE "${OUT_DIR}/${file}.tmp" "${OUT_DIR}/${file}" ONLY_IF_DIFFERENT)
  file(REMOVE "${OUT_DIR}/${file}.tmp")
endfunction()
write_gen(cli_commands.h "enum cli_cmd {\n        CMD_NONE,${cmd_enum}\n        CLI_N_COMMANDS\n};\n")
write_gen(cli_commands_table.h "${cmd_rows}")
write_gen(cli_commands_run.h "${cmd_runs}")
write_gen(cli_option_ids.h "enum opt_id {\n${opt_enum}};\n")
write_gen(cli_options_table.h "${rows}")
