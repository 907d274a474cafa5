package io.kvrouter.cluster.testkit;

import io.kvrouter.cluster.ModelAdmission;
import io.kvrouter.cluster.RouterCluster;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.BehaviorInterceptor;
import org.apache.pekko.actor.typed.TypedActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;

/**
 * Silences a node's pool summaries while paused: its admission actors' summary ticks are dropped before the actor
 * sees them, as if the region had gone dark for every other region, and publishing resumes when unpaused.
 */
public final class PoolPause implements RouterCluster.AdmissionDecorator {
  private final AtomicBoolean paused = new AtomicBoolean();

  public void pause() {
    paused.set(true);
  }

  public void resume() {
    paused.set(false);
  }

  @Override
  public Behavior<ModelAdmission.Command> apply(Behavior<ModelAdmission.Command> admission) {
    return Behaviors.intercept(() -> new BehaviorInterceptor<ModelAdmission.Command, ModelAdmission.Command>(
        ModelAdmission.Command.class) {
      @Override
      public Behavior<ModelAdmission.Command> aroundReceive(TypedActorContext<ModelAdmission.Command> ctx,
          ModelAdmission.Command message, ReceiveTarget<ModelAdmission.Command> target) {
        if (message == ModelAdmission.PublishPool.INSTANCE && paused.get()) {
          return Behaviors.same();
        }
        return target.apply(ctx, message);
      }
    }, admission);
  }
}
