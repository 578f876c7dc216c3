// The `pagoda` binary: parses the command line and dispatches to a subcommand.
#include <cstdio>

int main(int argc, char** argv) {
  std::puts("pagoda");
  return 0;
}
