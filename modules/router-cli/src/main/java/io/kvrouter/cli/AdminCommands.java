package io.kvrouter.cli;

import com.google.protobuf.MessageOrBuilder;
import io.kvrouter.api.v1.ListModelsRequest;
import io.kvrouter.api.v1.ModelStateRequest;
import io.kvrouter.api.v1.SetPolicyRequest;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionStage;
import java.util.function.Function;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** Admin service: model state, model list, policy changes. */
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
