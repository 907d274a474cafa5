package io.kvrouter.cli;

import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.ScopeType;
import picocli.CommandLine.Spec;

/**
 * {@code kvrouter-cli}: a command-line client for the kvrouter gRPC services (Router, Workers, Admin). Answers are
 * printed as JSON on stdout; errors as {@code ERROR <STATUS> <reason>: <description>} on stderr.
 *
 * <p>Exit codes: {@link #EXIT_OK} 0, {@link #EXIT_USAGE} 1 (bad or missing options), {@link #EXIT_GRPC} 2 (the
 * server answered with a gRPC error status, or the call timed out), {@link #EXIT_FAILURE} 3 (anything else).
 */
@Command(
    name = "kvrouter-cli",
    mixinStandardHelpOptions = true,
    version = "kvrouter-cli 0.1.0",
    description = "Command-line client for the kvrouter gRPC API (Router, Workers, Admin).",
    synopsisSubcommandLabel = "COMMAND",
    subcommands = {
      WorkerCommands.Register.class,
      WorkerCommands.Deregister.class,
      RouteCommands.Select.class,
      RouteCommands.Book.class,
      BookingCommands.Release.class,
      BookingCommands.MarkPrefillDone.class,
      BookingCommands.Renew.class,
      AdminCommands.State.class,
      AdminCommands.Explain.class,
      AdminCommands.Models.class,
      AdminCommands.SetPolicy.class,
      CommandLine.HelpCommand.class
    },
    footer = {
      "",
      "Exit codes: 0 ok, 1 usage error, 2 gRPC error status (or no answer within the timeout), 3 other failure."
    })
public final class KvRouterCli implements Runnable {

  public static final int EXIT_OK = 0;
  public static final int EXIT_USAGE = 1;
  public static final int EXIT_GRPC = 2;
  public static final int EXIT_FAILURE = 3;

  public static final String DEFAULT_TARGET = "127.0.0.1:50051";

  @Spec CommandSpec spec;

  private Args.Target target = Args.parseTarget(DEFAULT_TARGET);
  private Duration timeout = Duration.ofSeconds(5);

  @Option(
      names = "--target",
      scope = ScopeType.INHERIT,
      paramLabel = "HOST:PORT",
      defaultValue = "${env:KVROUTER_TARGET:-" + DEFAULT_TARGET + "}",
      description = "Router gRPC address (default: $KVROUTER_TARGET, else " + DEFAULT_TARGET + "; now ${DEFAULT-VALUE}).")
  void setTarget(String value) {
    try {
      target = Args.parseTarget(value);
    } catch (IllegalArgumentException e) {
      throw new ParameterException(spec.commandLine(), e.getMessage());
    }
  }

  @Option(
      names = "--timeout",
      scope = ScopeType.INHERIT,
      paramLabel = "DURATION",
      defaultValue = "5s",
      description = "Deadline per call, e.g. 5s, 500ms, 1m (default: ${DEFAULT-VALUE}).")
  void setTimeout(String value) {
    try {
      timeout = Args.parseDuration(value);
    } catch (IllegalArgumentException e) {
      throw new ParameterException(spec.commandLine(), e.getMessage());
    }
  }

  @Option(
      names = "--token",
      scope = ScopeType.INHERIT,
      paramLabel = "TOKEN",
      defaultValue = "${env:KVROUTER_TOKEN}",
      description = "Bearer token sent with every call, for a router with kvrouter.auth on (default: $KVROUTER_TOKEN).")
  String token;

  @Option(
      names = "--tls",
      scope = ScopeType.INHERIT,
      description = "Connect over TLS, trusting the JDK's CAs (implied by --ca-file and --cert-file).")
  boolean tls;

  @Option(
      names = "--ca-file",
      scope = ScopeType.INHERIT,
      paramLabel = "PEM",
      defaultValue = "${env:KVROUTER_CA_FILE}",
      description = "Connect over TLS, trusting only the CA certificates in this PEM file (default: $KVROUTER_CA_FILE).")
  Path caFile;

  @Option(
      names = "--cert-file",
      scope = ScopeType.INHERIT,
      paramLabel = "PEM",
      defaultValue = "${env:KVROUTER_CERT_FILE}",
      description = "Client certificate chain (PEM) for a router that verifies clients; needs --key-file "
          + "(default: $KVROUTER_CERT_FILE).")
  Path certFile;

  @Option(
      names = "--key-file",
      scope = ScopeType.INHERIT,
      paramLabel = "PEM",
      defaultValue = "${env:KVROUTER_KEY_FILE}",
      description = "The client certificate's unencrypted PKCS#8 key (PEM) (default: $KVROUTER_KEY_FILE).")
  Path keyFile;

  /** The connection's security options, checked: a usage error when a client certificate lacks its key. */
  public CliSession.Security security() {
    if ((certFile == null) != (keyFile == null)) {
      throw new ParameterException(spec.commandLine(), "--cert-file and --key-file go together");
    }
    for (Path file : new Path[] {caFile, certFile, keyFile}) {
      if (file != null && !Files.isReadable(file)) {
        throw new ParameterException(spec.commandLine(), "cannot read " + file);
      }
    }
    return new CliSession.Security(token == null || token.isBlank() ? null : token,
        tls || caFile != null || certFile != null, caFile, certFile, keyFile);
  }

  public Args.Target target() {
    return target;
  }

  public Duration timeout() {
    return timeout;
  }

  @Override
  public void run() {
    throw new ParameterException(spec.commandLine(), "Missing required subcommand");
  }

  /** A configured command line (usage errors exit 1); set its out/err writers to capture output. */
  public static CommandLine commandLine() {
    CommandLine cl = new CommandLine(new KvRouterCli());
    cl.setCaseInsensitiveEnumValuesAllowed(true);
    cl.setParameterExceptionHandler(KvRouterCli::onUsageError);
    cl.setExecutionExceptionHandler((ex, cmd, parseResult) -> {
      cmd.getErr().println("ERROR " + ex);
      cmd.getErr().flush();
      return EXIT_FAILURE;
    });
    return cl;
  }

  /** Runs the CLI in-process with the given writers and answers the exit code. */
  public static int execute(PrintWriter out, PrintWriter err, String... args) {
    CommandLine cl = commandLine();
    cl.setOut(out);
    cl.setErr(err);
    try {
      return cl.execute(args);
    } finally {
      out.flush();
      err.flush();
    }
  }

  private static int onUsageError(ParameterException ex, String[] args) {
    CommandLine cmd = ex.getCommandLine();
    PrintWriter err = cmd.getErr();
    err.println(cmd.getColorScheme().errorText(ex.getMessage()));
    if (!CommandLine.UnmatchedArgumentException.printSuggestions(ex, err)) {
      cmd.usage(err, cmd.getColorScheme());
    }
    err.flush();
    return EXIT_USAGE;
  }

  public static void main(String[] args) {
    int code = execute(
        new PrintWriter(new java.io.OutputStreamWriter(System.out, StandardCharsets.UTF_8), true),
        new PrintWriter(new java.io.OutputStreamWriter(System.err, StandardCharsets.UTF_8), true),
        args);
    System.exit(code);
  }
}
