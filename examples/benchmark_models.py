"""Models shared by the synthetic benchmark and its DDP twin, so both time
exactly the same network."""

import torch.nn as nn
import torch.nn.functional as F


class MnistNet(nn.Module):
    """The example's classifier (22k parameters): communication-bound."""

    input_shape = (1, 28, 28)

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 10, kernel_size=5)
        self.conv2 = nn.Conv2d(10, 20, kernel_size=5)
        self.fc1 = nn.Linear(320, 50)
        self.fc2 = nn.Linear(50, 10)

    def forward(self, x):
        x = F.relu(F.max_pool2d(self.conv1(x), 2))
        x = F.relu(F.max_pool2d(self.conv2(x), 2))
        x = F.relu(self.fc1(x.flatten(1)))
        return F.log_softmax(self.fc2(x), dim=1)


class SmallVGG(nn.Module):
    """A CIFAR-sized VGG-style network (about 1.2M parameters in 14 tensors of
    very different sizes): a realistic mix of small and large gradients."""

    input_shape = (3, 32, 32)

    def __init__(self):
        super().__init__()
        def block(cin, cout):
            return [nn.Conv2d(cin, cout, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2)]
        self.features = nn.Sequential(*block(3, 32), *block(32, 64), *block(64, 128),
                                      *block(128, 128))
        self.classifier = nn.Sequential(nn.Linear(128 * 2 * 2, 1024), nn.ReLU(),
                                        nn.Linear(1024, 512), nn.ReLU(), nn.Linear(512, 10))

    def forward(self, x):
        return F.log_softmax(self.classifier(self.features(x).flatten(1)), dim=1)


MODELS = {"mnist": MnistNet, "vgg": SmallVGG}
