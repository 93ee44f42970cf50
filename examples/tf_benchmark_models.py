"""Keras models shared by the TensorFlow synthetic benchmark and its
MultiWorkerMirroredStrategy twin, so both time exactly the same network (the
same two networks as benchmark_models.py for torch)."""

import keras


def mnist_net():
    """The MNIST example's classifier (22k parameters): communication-bound."""
    return keras.Sequential([
        keras.Input((28, 28, 1)),
        keras.layers.Conv2D(10, 5, activation="relu"), keras.layers.MaxPooling2D(2),
        keras.layers.Conv2D(20, 5, activation="relu"), keras.layers.MaxPooling2D(2),
        keras.layers.Flatten(), keras.layers.Dense(50, activation="relu"),
        keras.layers.Dense(10)])


def small_vgg():
    """A CIFAR-sized VGG-style network (about 1.2M parameters in 14 tensors of
    very different sizes): a realistic mix of small and large gradients."""
    layers = [keras.Input((32, 32, 3))]
    for channels in (32, 64, 128, 128):
        layers += [keras.layers.Conv2D(channels, 3, padding="same", activation="relu"),
                   keras.layers.MaxPooling2D(2)]
    layers += [keras.layers.Flatten(), keras.layers.Dense(1024, activation="relu"),
               keras.layers.Dense(512, activation="relu"), keras.layers.Dense(10)]
    return keras.Sequential(layers)


MODELS = {"mnist": mnist_net, "vgg": small_vgg}


def build_model(name, seed):
    keras.utils.set_random_seed(seed)
    return MODELS[name]()
