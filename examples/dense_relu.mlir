// relu(x @ W + b): a dense layer whose bias add and relu fuse into the dot's epilogue.
func.func @main(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  %d = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %bb = stablehlo.broadcast_in_dim %b, dims = [1] : (tensor<16xf32>) -> tensor<4x16xf32>
  %a = stablehlo.add %d, %bb : tensor<4x16xf32>
  %z = stablehlo.constant dense<0.0> : tensor<4x16xf32>
  %r = stablehlo.maximum %a, %z : tensor<4x16xf32>
  return %r : tensor<4x16xf32>
}
