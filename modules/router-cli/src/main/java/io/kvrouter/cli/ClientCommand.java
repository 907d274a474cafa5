package io.kvrouter.cli;

import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.MessageOrBuilder;
import com.google.protobuf.util.JsonFormat;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.ParentCommand;
import picocli.CommandLine.Spec;

/**
 * A subcommand that makes one gRPC call: {@link #prepare()} validates the options and builds the request (throwing
 * a usage error before any connection is made), then the call runs in a fresh {@link CliSession} and its answer is
 * printed (as JSON unless the command overrides {@link #print}).
 */
abstract class ClientCommand implements Callable<Integer> {

  /** Extra time past the gRPC deadline before the CLI stops waiting on its own. */
  private static final Duration LOCAL_WAIT_MARGIN = Duration.ofSeconds(2);

  static final JsonFormat.Printer JSON = JsonFormat.printer().includingDefaultValueFields();

  @ParentCommand KvRouterCli root;

  @Spec CommandSpec spec;

  /** Validates the options and answers the call to make. */
  protected abstract Function<CliSession, CompletionStage<? extends MessageOrBuilder>> prepare();

  @Override
  public final Integer call() {
    Function<CliSession, CompletionStage<? extends MessageOrBuilder>> call = prepare();
    CliSession.Security security = root.security();
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter err = spec.commandLine().getErr();
    Duration timeout = root.timeout();
    MessageOrBuilder answer;
    try (CliSession session = new CliSession(root.target(), timeout, security)) {
      answer = call.apply(session)
          .toCompletableFuture()
          .get(timeout.plus(LOCAL_WAIT_MARGIN).toMillis(), TimeUnit.MILLISECONDS);
    } catch (ExecutionException e) {
      return fail(err, e.getCause() == null ? e : e.getCause());
    } catch (TimeoutException e) {
      err.println("ERROR DEADLINE_EXCEEDED: no answer from " + root.target() + " within " + timeout);
      return KvRouterCli.EXIT_GRPC;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      err.println("ERROR interrupted");
      return KvRouterCli.EXIT_FAILURE;
    } catch (RuntimeException e) {
      return fail(err, e);
    }
    try {
      out.println(print(answer));
    } catch (InvalidProtocolBufferException e) {
      err.println("ERROR cannot print the answer as JSON: " + e.getMessage());
      return KvRouterCli.EXIT_FAILURE;
    }
    return KvRouterCli.EXIT_OK;
  }

  /** The answer as printed: JSON unless the command prints it otherwise. */
  protected String print(MessageOrBuilder answer) throws InvalidProtocolBufferException {
    return JSON.print(answer);
  }

  private static int fail(PrintWriter err, Throwable t) {
    Optional<ErrorReport.Failure> failure = ErrorReport.find(t);
    if (failure.isPresent()) {
      err.println(failure.get().line());
      return KvRouterCli.EXIT_GRPC;
    }
    err.println("ERROR " + t);
    return KvRouterCli.EXIT_FAILURE;
  }

  /** A usage error from this subcommand (exit code 1, with its usage help). */
  protected ParameterException usage(String message) {
    return new ParameterException(spec.commandLine(), message);
  }

  /** Runs a parser, turning its IllegalArgumentException into a usage error. */
  protected <T> T parse(java.util.function.Supplier<T> parser) {
    try {
      return parser.get();
    } catch (IllegalArgumentException e) {
      throw usage(e.getMessage());
    }
  }

  /** Rejects a blank required string option. */
  protected String nonBlank(String value, String option) {
    if (value == null || value.isBlank()) {
      throw usage(option + " must not be empty");
    }
    return value.trim();
  }
}
