# Runs a command, copies what it prints (standard error merged into standard output), then
# prints "exit code: N" on a line of its own, so that a test can pin the exact exit status
# (`not` accepts any failure, an internal compiler error's status 3 included).
import subprocess
import sys

result = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
sys.stdout.buffer.write(result.stdout)
sys.stdout.write("exit code: %d\n" % result.returncode)
