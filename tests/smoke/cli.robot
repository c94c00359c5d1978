*** Settings ***
Documentation       Smoke tests of the installed ``toolcycle`` command, driven as a user
...                 drives it: the version, the demo, and tools, schema and call on a Python
...                 module, a workspace folder and an MCP server (``mcp-server-time``, which
...                 the dev extra installs beside the Python that runs this suite).
...
...                 Run it with ``python -m robot --outputdir build/robot tests/smoke``.

Library             Collections
Library             OperatingSystem
Library             Process

Suite Setup         Find The Commands


*** Variables ***
${TIMEOUT}      120s


*** Test Cases ***
Version Names The Command And Its Version
    ${result} =    Toolcycle    --version
    Should Succeed    ${result}
    Should Match Regexp    ${result.stdout}    ^toolcycle \\d+\\.\\d+\\S*$

Help Describes The Commands
    ${result} =    Toolcycle    --help
    Should Succeed    ${result}
    Should Contain    ${result.stdout}    Look at and run agent tools
    Should Contain    ${result.stdout}    exit codes:

Demo Shows Each Outcome And Rolls Back
    ${result} =    Toolcycle    demo
    Should Succeed    ${result}
    Should Contain    ${result.stdout}    denied: ToolAccessDeniedError
    Should Contain    ${result.stdout}    cancelled:
    Should Contain    ${result.stdout}    rolled back 3 changes; complete: True

A Module File Is Listed, Described And Called
    ${result} =    Toolcycle    tools    --module    ${CURDIR}/smoke_tools.py
    Should Succeed    ${result}
    Should Match Regexp    ${result.stdout}    (?m)^greet\\s+wrapped\\s+no\\s+yes\\s+Greet someone by name\\.$
    ${result} =    Toolcycle    schema    add    --module    ${CURDIR}/smoke_tools.py
    Should Succeed    ${result}
    ${schemas} =    Evaluate    json.loads($result.stdout)
    Should Be Equal    ${schemas}[input_schema][required]    ${{ ["a", "b"] }}
    ${report} =    Call Tool    greet    {"name": "Ada"}    --read-only    --module    ${CURDIR}/smoke_tools.py
    Should Be Equal    ${report}[output]    Hello, Ada!

A Dotted Module Is Found From The Current Folder
    ${result} =    Toolcycle    call    add    --args    {"a": 2, "b": 3}    --module    smoke_tools
    ...    cwd=${CURDIR}
    Should Succeed    ${result}
    ${report} =    Evaluate    json.loads($result.stdout)
    Should Be Equal As Integers    ${report}[output]    5

A Module That Is Not Found Says Where It Looked
    ${result} =    Toolcycle    tools    --module    no_such_smoke_module    cwd=${CURDIR}
    Should Be Equal As Integers    ${result.rc}    3
    Should Contain    ${result.stderr}    searched: ${CURDIR}
    Should Not Contain    ${result.stderr}    Traceback

A Workspace Is Read-Only Unless Writable
    ${folder} =    Evaluate    tempfile.mkdtemp(prefix="toolcycle-smoke-")
    Create File    ${folder}/notes.txt    first line
    ${result} =    Toolcycle    tools    --workspace    ${folder}
    Should Succeed    ${result}
    Should Match Regexp    ${result.stdout}    (?m)^write_file\\s+builtin\\s+yes\\s+yes
    ${result} =    Toolcycle    schema    read_file    --workspace    ${folder}
    Should Succeed    ${result}
    Should Contain    ${result.stdout}    "path"
    ${report} =    Call Tool    read_file    {"path": "notes.txt"}    --workspace    ${folder}
    Should Be Equal    ${report}[output][content]    first line
    ${result} =    Toolcycle    call    write_file    --args    {"path": "new.txt", "content": "x"}
    ...    --workspace    ${folder}
    Should Be Equal As Integers    ${result.rc}    1
    Should Contain    ${result.stderr}    --writable
    File Should Not Exist    ${folder}/new.txt
    ${report} =    Call Tool    write_file    {"path": "new.txt", "content": "x"}
    ...    --workspace    ${folder}    --writable
    File Should Exist    ${folder}/new.txt
    [Teardown]    Remove Directory    ${folder}    recursive=True

An MCP Server Is Listed, Described And Called
    ${result} =    Toolcycle    tools    --mcp    ${MCP_SERVER_TIME}
    Should Succeed    ${result}
    Should Match Regexp    ${result.stdout}    (?m)^get_current_time\\s+mcp:mcp-server-time\\s
    Should Match Regexp    ${result.stdout}    (?m)^convert_time\\s
    ${result} =    Toolcycle    schema    get_current_time    --mcp    ${MCP_SERVER_TIME}
    Should Succeed    ${result}
    ${schemas} =    Evaluate    json.loads($result.stdout)
    Dictionary Should Contain Key    ${schemas}[input_schema][properties]    timezone
    ${report} =    Call Tool    get_current_time    {"timezone": "UTC"}    --read-only
    ...    --mcp    ${MCP_SERVER_TIME}
    Should Be Equal    ${report}[output][timezone]    UTC

An MCP Program Not On PATH Is Named With A Way Out
    ${result} =    Toolcycle    tools    --mcp    no-such-smoke-server
    Should Be Equal As Integers    ${result.rc}    3
    Should Contain    ${result.stderr}    program 'no-such-smoke-server' was not found on PATH
    Should Not Contain    ${result.stderr}    Traceback


*** Keywords ***
Find The Commands
    [Documentation]    The ``toolcycle`` and ``mcp-server-time`` scripts beside the Python
    ...    that runs the suite (a virtual environment's ``bin``), else on ``PATH``.
    ${toolcycle} =    Installed Script    toolcycle
    ${server} =    Installed Script    mcp-server-time
    Set Suite Variable    ${TOOLCYCLE}    ${toolcycle}
    Set Suite Variable    ${MCP_SERVER_TIME}    ${server}

Installed Script
    [Arguments]    ${name}
    ${beside} =    Evaluate    pathlib.Path(sys.executable).parent / $name
    ${found} =    Evaluate    str($beside) if $beside.is_file() else shutil.which($name)
    Should Not Be Equal    ${found}    ${None}
    ...    msg=${name} is neither beside ${{ sys.executable }} nor on PATH; install the dev extra
    RETURN    ${found}

Toolcycle
    [Documentation]    Run the installed command with a bounded wait; return the result.
    [Arguments]    @{args}    &{options}
    ${result} =    Run Process    ${TOOLCYCLE}    @{args}    timeout=${TIMEOUT}    on_timeout=kill
    ...    &{options}
    Log    ${result.stdout}
    Log    ${result.stderr}
    RETURN    ${result}

Call Tool
    [Documentation]    ``toolcycle call NAME --args ARGS ...`` that succeeds; return the printed report.
    [Arguments]    ${name}    ${arguments}    @{more}
    ${result} =    Toolcycle    call    ${name}    --args    ${arguments}    @{more}
    Should Succeed    ${result}
    ${report} =    Evaluate    json.loads($result.stdout)
    Should Be True    ${report}[success]
    RETURN    ${report}

Should Succeed
    [Arguments]    ${result}
    Should Be Equal As Integers    ${result.rc}    0    msg=exit code ${result.rc}: ${result.stderr}
