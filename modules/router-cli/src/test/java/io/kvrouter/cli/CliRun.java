package io.kvrouter.cli;

import java.io.PrintWriter;
import java.io.StringWriter;

/** One in-process CLI run: its exit code and what it printed. */
record CliRun(int exitCode, String out, String err) {

  static CliRun run(String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    int code = KvRouterCli.execute(new PrintWriter(out), new PrintWriter(err), args);
    return new CliRun(code, out.toString(), err.toString());
  }

  @Override
  public String toString() {
    return "exit " + exitCode + "\n--- stdout\n" + out + "--- stderr\n" + err;
  }
}
