// exp(x) read by two consumers of different shapes: duplicating the exp into both
// kernels would compute it twice, so fusion keeps it in its own kernel (or shares it).
func.func @main(%x: tensor<64x128xf32>) -> (tensor<64xf32>, tensor<64x128xf32>) {
  %e = stablehlo.exponential %x : tensor<64x128xf32>
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %s = stablehlo.reduce(%e init: %zero) applies stablehlo.add across dimensions = [1] : (tensor<64x128xf32>, tensor<f32>) -> tensor<64xf32>
  %t = stablehlo.transpose %e, dims = [1, 0] : (tensor<64x128xf32>) -> tensor<128x64xf32>
  %u = stablehlo.reshape %t : (tensor<128x64xf32>) -> tensor<64x128xf32>
  %m = stablehlo.multiply %u, %x : tensor<64x128xf32>
  return %s, %m : tensor<64xf32>, tensor<64x128xf32>
}
