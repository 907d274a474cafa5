package io.kvrouter.cli;

import com.google.protobuf.MessageOrBuilder;
import com.google.protobuf.InvalidProtocolBufferException;
import io.kvrouter.api.v1.ExplainReply;
import io.kvrouter.api.v1.ExplainRequest;
import io.kvrouter.api.v1.ListModelsRequest;
import io.kvrouter.api.v1.ModelStateRequest;
import io.kvrouter.api.v1.SetPolicyRequest;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionStage;
import java.util.function.Function;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** Admin service: model state, model list, policy changes, last decisions. */
final class AdminCommands {

  private AdminCommands() {}

  @Command(name = "state", mixinStandardHelpOptions = true,
      description = "A model's admission state: workers, loads, bookings, policy (Admin.GetModelState).")
  static final class State extends ClientCommand {
    @Option(names = "--model", required = true, paramLabel = "MODEL", description = "Model name.") String model;

    @Override
    protected Function<CliSession, CompletionStage<? extends MessageOrBuilder>> prepare() {
      ModelStateRequest req = ModelStateRequest.newBuilder().setModel(nonBlank(model, "--model")).build();
      return s -> s.admin().getModelState(req);
    }
  }

  @Command(name = "explain", mixinStandardHelpOptions = true,
      description = {"A model's last decisions with why: candidates, costs and their terms, filtered ranks, pick and "
          + "margin (Admin.ExplainRecent).",
          "The node asked tells its own Selects and the Books of the node hosting the model's admission actor."})
  static final class Explain extends ClientCommand {
    @Option(names = "--model", required = true, paramLabel = "MODEL", description = "Model name.") String model;
    @Option(names = "--limit", paramLabel = "N", description = "At most N decisions, newest first (default: all kept).")
    Integer limit;
    @Option(names = "--json", description = "Print the answer as JSON.") boolean json;

    @Override
    protected Function<CliSession, CompletionStage<? extends MessageOrBuilder>> prepare() {
      if (limit != null && limit < 0) {
        throw usage("--limit must be >= 0, got " + limit);
      }
      ExplainRequest req = ExplainRequest.newBuilder().setModel(nonBlank(model, "--model"))
          .setLimit(limit == null ? 0 : limit).build();
      return s -> s.admin().explainRecent(req);
    }

    @Override
    protected String print(MessageOrBuilder answer) throws InvalidProtocolBufferException {
      return json ? super.print(answer) : ExplanationText.of((ExplainReply) answer);
    }
  }

  @Command(name = "models", mixinStandardHelpOptions = true, description = "List known models (Admin.ListModels).")
  static final class Models extends ClientCommand {
    @Override
    protected Function<CliSession, CompletionStage<? extends MessageOrBuilder>> prepare() {
      ListModelsRequest req = ListModelsRequest.getDefaultInstance();
      return s -> s.admin().listModels(req);
    }
  }

  @Command(name = "set-policy", mixinStandardHelpOptions = true,
      description = "Change a model's policy and/or its parameters (Admin.SetPolicy).")
  static final class SetPolicy extends ClientCommand {
    @Option(names = "--model", required = true, paramLabel = "MODEL", description = "Model name.") String model;
    @Option(names = "--policy", paramLabel = "P",
        description = "round_robin | random | least_in_flight | power_of_two | kv (omit to keep the current one).")
    String policy;
    @Option(names = "--param", paramLabel = "KEY=VALUE", description = "A policy parameter; repeatable.")
    List<String> params;

    SetPolicyRequest request() {
      SetPolicyRequest.Builder b = SetPolicyRequest.newBuilder().setModel(nonBlank(model, "--model"));
      if (policy != null) {
        b.setPolicy(nonBlank(policy, "--policy"));
      }
      Map<String, String> parsed = parse(() -> Args.parseParams(params));
      if (policy == null && parsed.isEmpty()) {
        throw usage("give --policy and/or at least one --param");
      }
      return b.putAllParameters(parsed).build();
    }

    @Override
    protected Function<CliSession, CompletionStage<? extends MessageOrBuilder>> prepare() {
      SetPolicyRequest req = request();
      return s -> s.admin().setPolicy(req);
    }
  }
}
